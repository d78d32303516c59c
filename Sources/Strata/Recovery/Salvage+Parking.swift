import Foundation
import GRDB

/// Rows the salvage reads from a damaged file but the new file refuses: a page of the row's
/// overflow chain damaged, a value that now fails a constraint. They are parked in
/// `rejected_writes` (``RejectedWrite/Kind/salvagedRow``) as they read, never dropped.
extension Salvage {
    /// Inserts `rows` of `table` one at a time; a row the new file refuses is parked.
    /// Returns how many were inserted. A row that cannot be parked either is counted lost.
    static func insertOrPark(_ rows: [Row], _ table: String, _ columns: [String], key: String, into store: Store,
                             conflict: String, _ report: inout SalvageReport) -> Int {
        var inserted = 0
        for row in rows {
            do {
                try insert([row], table, columns, into: store, conflict: conflict)
                inserted += 1
            } catch {
                if (try? park(row, of: table, columns, key: key, error: error, into: store)) != nil {
                    report.parked[table, default: 0] += 1
                } else {
                    report.skipped[table, default: 0] += 1
                    report.lostAtMost[table, default: 0] += 1
                }
            }
        }
        return inserted
    }

    /// One refused row into `rejected_writes`: its table, its key, its entity number if it
    /// has one, SQLite's error, and the row as JSON (``json(of:_:)``).
    static func park(_ row: Row, of table: String, _ columns: [String], key: String, error: Error, into store: Store) throws {
        let message = (error as? DatabaseError)?.message ?? "\(error)"
        try store.queue.write { db in
            try db.execute(sql: """
                INSERT INTO rejected_writes (rejected_at, error, kind, entity_num, name, number, payload)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [unixMilliseconds(), message, RejectedWrite.Kind.salvagedRow.rawValue,
                                 columns.contains("entity_num") ? row.value("entity_num", as: Int64.self) : nil,
                                 table, row.value(key, as: Int64.self), Data(json(of: row, columns))])
        }
    }

    /// The row as a JSON object: integers and reals as numbers, text as strings (bytes that
    /// are not UTF-8, as damage leaves them, read as U+FFFD), a BLOB as its bytes in hex,
    /// NULL as null; keys sorted, so the same row gives the same text.
    static func json(of row: Row, _ columns: [String]) -> [UInt8] {
        var object: [String: Any] = [:]
        for column in columns {
            switch (row.value(column, as: DatabaseValue.self) ?? .null).storage {
            case .null: object[column] = NSNull()
            case .int64(let value): object[column] = NSNumber(value: value)
            case .double(let value):
                if value.isFinite { object[column] = NSNumber(value: value) } else { object[column] = String(value) }
            case .string(let value): object[column] = value
            case .blob(let data): object[column] = data.map { String(format: "%02x", $0) }.joined()
            }
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return [UInt8](data)
    }
}

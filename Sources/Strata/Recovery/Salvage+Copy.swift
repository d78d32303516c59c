import Foundation
import GRDB
import Logging

/// A read in the salvage met a damaged page (the probe's signal to look past it).
private enum SalvageProbe: Error { case damaged }

/// How the salvage reads rows out of a damaged file: by key, probing past a page that does
/// not read (``copyKeyed``); the operation log by node; a table without a usable key by a
/// scan. Each copies what it can and counts what it cannot.
extension Salvage {
    /// The columns the source's `table` and the new file's `target` (by default the same
    /// table) both have (nil if the source lacks it).
    static func columns(_ table: String, _ source: DatabaseQueue, _ store: Store, target: String? = nil) -> [String]? {
        guard let from = try? source.read({ db in try db.tableExists(table) ? try db.columns(in: table).map(\.name) : nil }),
              let to = try? store.queue.read({ db in try db.columns(in: target ?? table).map(\.name) })
        else { return nil }
        let shared = from.filter(to.contains)
        return shared.isEmpty ? nil : shared
    }

    static func insert(_ rows: [Row], _ table: String, _ columns: [String], into store: Store,
                               conflict: String = "OR REPLACE") throws {
        guard !rows.isEmpty else { return }
        let sql = "INSERT \(conflict) INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
        try store.queue.write { db in
            let statement = try db.cachedStatement(sql: sql)
            for row in rows { try statement.execute(arguments: StatementArguments(columns.map { row.value($0, as: DatabaseValue.self) ?? .null })) }
        }
    }

    /// `filter`: an SQL condition the rows copied must meet; `seekFilter`: one the probes
    /// past a damaged page keep to (the leading columns of a composite key, so that a probe
    /// is a seek); `conflict`: what a row whose key is already in `store` does.
    static func copyKeyed(_ table: String, key: String, from source: DatabaseQueue, into store: Store,
                                  _ report: inout SalvageReport, filter: String = "1", seekFilter: String = "1",
                                  conflict: String = "OR REPLACE", as target: String? = nil) {
        let destination = target ?? table
        guard let columns = columns(table, source, store, target: destination) else { return }
        let list = columns.joined(separator: ", ")
        // The table's own B-tree, never an index: with statistics, SQLite may scan a small
        // table's unique index and sort, and a damaged index page would hide intact rows.
        // (The operation log's seeks go through its (node, seq) index on purpose.)
        let from = seekFilter == "1" ? "\(table) NOT INDEXED" : table
        func insert(_ rows: [Row], _ table: String, _ columns: [String], into store: Store) throws {
            try Salvage.insert(rows, table, columns, into: store, conflict: conflict)
        }
        // Whether a seek to `k` reads (nil: it fails; .some(nil): nothing at or after k).
        func firstKey(from k: Int64) -> Int64?? {
            do { return .some(try source.read { try Int64.fetchOne($0, sql: "SELECT \(key) FROM \(from) WHERE \(seekFilter) AND \(key) >= ? ORDER BY \(key) LIMIT 1", arguments: [k]) }) }
            catch { return nil }
        }
        var next = Int64.min
        var copied = 0
        var keysSkipped: Int64 = 0   // keys in the ranges skipped past damaged pages: rows lost, at most
        while true {
            // Row by row, so that what reads before a damaged page is kept (in a table without
            // rowid, that includes the row dividing it from the previous leaf, in their parent).
            var rows: [Row] = []
            do {
                try source.read { db in
                    let cursor = try Row.fetchCursor(db, sql: "SELECT \(list) FROM \(from) WHERE \(key) >= ? AND (\(filter)) ORDER BY \(key) LIMIT 256", arguments: [next])
                    while let row = try cursor.next() { rows.append(row.copy()) }
                }
            } catch {
                if let last = rows.last?.value(key, as: Int64.self), (try? insert(rows, destination, columns, into: store)) != nil {
                    copied += rows.count
                    next = last &+ 1
                    if next == Int64.min { break }
                }
                rows = []
            }
            do {
                if rows.isEmpty, firstKey(from: next) != .some(nil) { throw SalvageProbe.damaged }
                guard let last = rows.last?.value(key, as: Int64.self) else { break }
                if rows.count == 256 {
                    if rows.first?.value(key, as: Int64.self) == last {
                        // One key fills the batch (an entity's many components): take all of it.
                        rows = try source.read { db in try Row.fetchAll(db, sql: "SELECT \(list) FROM \(from) WHERE \(key) = ? AND (\(filter))", arguments: [last]) }
                    } else {
                        rows.removeAll { $0.value(key, as: Int64.self) == last }   // the last key's rows go in the next batch, whole
                    }
                }
                try insert(rows, destination, columns, into: store)
                copied += rows.count
                next = (rows.last?.value(key, as: Int64.self) ?? last) &+ 1   // past the last key copied
                if next == Int64.min { break }
            } catch {
                // A damaged page somewhere in that batch. Go a key at a time while seeks read;
                // a key whose rows do not read is skipped; a seek that fails is on a damaged page.
                switch firstKey(from: next) {
                case .some(.none):
                    break   // nothing at or after `next`
                case .some(.some(let k)):
                    if let rows = try? source.read({ db in try Row.fetchAll(db, sql: "SELECT \(list) FROM \(from) WHERE \(key) = ? AND (\(filter))", arguments: [k]) }) {
                        if (try? insert(rows, destination, columns, into: store)) != nil {
                            copied += rows.count
                        } else {
                            // They read, but the new file refuses one: each on its own, the refused parked.
                            copied += insertOrPark(rows, destination, columns, key: key, into: store, conflict: conflict, &report)
                        }
                    } else {
                        // Its key is found (an index reads) but its row does not: one row lost, known.
                        report.skipped[destination, default: 0] += 1
                        report.lostAtMost[destination, default: 0] += 1
                    }
                    next = k &+ 1
                    continue
                case .none:
                    // Probe forward for a key whose seek reads, then bisect back to the first one.
                    // The keys here are numbers from 1 up: a probe from the start of the table
                    // (its first leaf damaged) starts at 0, not at Int64.min, whose doublings
                    // would never reach them.
                    next = max(next, 0)
                    let base = next
                    var step: Int64 = 1
                    var readable: Int64?
                    while step < (1 << 62) {
                        let probe = base &+ step
                        if probe < base { break }
                        if firstKey(from: probe) != nil { readable = probe; break }
                        step *= 2
                    }
                    guard var high = readable else {
                        report.unreadable.append(destination)
                        break
                    }
                    var low = step == 1 ? base : base &+ step / 2
                    while high - low > 1 {
                        let middle = low + (high - low) / 2
                        if firstKey(from: middle) != nil { high = middle } else { low = middle }
                    }
                    report.skipped[destination, default: 0] += 1
                    keysSkipped = keysSkipped &+ (high &- next)
                    // In a table without rowid, the row dividing two leaves sits in their parent
                    // page: a seek to it goes on down to the damaged leaf and fails, but a cursor
                    // walking back from `high` reads it before it reaches the damage.
                    var dividers: [Row] = []
                    try? source.read { db in
                        let cursor = try Row.fetchCursor(db, sql: "SELECT \(list) FROM \(from) WHERE \(seekFilter) AND \(key) < ? AND \(key) >= ? AND (\(filter)) ORDER BY \(key) DESC", arguments: [high, next])
                        while let row = try cursor.next() { dividers.append(row.copy()) }
                    }
                    if (try? insert(dividers, destination, columns, into: store)) != nil {
                        copied += dividers.count
                        keysSkipped -= Int64(Set(dividers.compactMap { $0.value(key, as: Int64.self) }).count)
                    }
                    next = high
                    continue
                }
                break
            }
        }
        report.rows[destination, default: 0] += copied
        if keysSkipped > 0 {
            report.lostAtMost[destination, default: 0] += rowsLostAtMost(table, filter: filter, keysSkipped: keysSkipped,
                                                                          copied: copied, from: source)
        }
    }

    /// How many rows the ranges skipped can have held, at most: the keys in them (exact
    /// where keys are dense), but never more than the table counts beyond what was copied
    /// (a count an intact index answers, when one does), nor more than the file's pages can
    /// hold (a page holds at most a quarter of its bytes in rows: a cell takes 4 bytes or
    /// more). Sparse keys (numbers never reused) make the first far too high alone.
    static func rowsLostAtMost(_ table: String, filter: String, keysSkipped: Int64, copied: Int, from source: DatabaseQueue) -> Int64 {
        var bound = keysSkipped
        if let total = try? source.read({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table) WHERE \(filter)") }) ?? nil {
            bound = min(bound, Int64(max(0, total - copied)))
        }
        if let (pages, size) = try? source.read({ db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0, try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0)
        }), pages > 0, size > 0 {
            bound = min(bound, Int64(pages) * Int64(size / 4))
        }
        return bound
    }

    /// The received operations, keyed by (node, seq): each node's sequence is copied like
    /// an integer-keyed table (past damaged pages). The nodes come from every table that
    /// names them, and from the log itself read from both ends up to a damaged page: a node
    /// named nowhere else whose every operation sits between two damaged pages is the one
    /// thing lost unseen. (This replica's operations, keyed by their sequence alone, are
    /// copied with the integer-keyed tables.) A file of schema 13 or older keeps every
    /// operation in one `operation_log` table: this replica's go to `local_operations`.
    static func copyOperationLog(from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        let legacy = (try? source.read { db in try db.tableExists("operation_log") }) ?? false
        let table = legacy ? "operation_log" : "received_operations"
        guard columns(table, source, store, target: "received_operations") != nil else { return }
        var nodes = Set<Data>()
        for sql in ["SELECT node FROM vector_clock", "SELECT node FROM operation_floor", "SELECT node FROM peer_acks",
                    "SELECT node_id FROM replica", "SELECT DISTINCT node FROM \(table) ORDER BY node",
                    "SELECT DISTINCT node FROM \(table) ORDER BY node DESC"] {
            try? source.read { db in
                let cursor = try Data.fetchCursor(db, sql: sql)
                while let node = try cursor.next() { nodes.insert(node) }
            }
        }
        let local = try? source.read { db in try Data.fetchOne(db, sql: "SELECT node_id FROM replica WHERE id = 1") }
        for node in nodes.sorted(by: { $0.lexicographicallyPrecedes($1) }) where node.count == 16 {
            let hex = node.map { String(format: "%02x", $0) }.joined()
            copyKeyed(table, key: "seq", from: source, into: store, &report, filter: "node = x'\(hex)'", seekFilter: "node = x'\(hex)'",
                      as: legacy && node == local ? "local_operations" : "received_operations")
        }
        if report.rows["received_operations"] == nil { report.rows["received_operations"] = 0 }
    }

    /// A table keyed otherwise (text, blobs): read in key order up to a damaged page, then
    /// backwards from its end down to it, so that one damaged page costs its own rows only
    /// (with more than one, the rows between the first and the last are lost too).
    static func copyScanned(_ table: String, from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        guard let columns = columns(table, source, store) else { return }
        let list = columns.joined(separator: ", ")
        let key = ((try? source.read { db in try db.primaryKey(table).columns }) ?? []).joined(separator: ", ")
        var rows: [Row] = []
        func scan(_ order: String) throws {
            try source.read { db in
                let cursor = try Row.fetchCursor(db, sql: "SELECT \(list) FROM \(table)" + (key.isEmpty ? "" : " ORDER BY \(order)"))
                while let row = try cursor.next() { rows.append(row.copy()) }
            }
        }
        do {
            try scan(key)
        } catch {
            let before = rows.count
            let descending = key.split(separator: ",").map { "\($0.trimmingCharacters(in: .whitespaces)) DESC" }.joined(separator: ", ")
            do {
                if !key.isEmpty { try scan(descending) }
            } catch {}
            if rows.count > before {
                report.skipped[table, default: 0] += 1
            } else {
                report.unreadable.append(table)
            }
        }
        do {
            try insert(rows, table, columns, into: store)
            report.rows[table] = rows.count
        } catch {
            report.unreadable.append("\(table) (not written: \(error))")
        }
    }
}

import GRDB
import GRDBSQLite

/// What a compaction step writes once it has read its rows: the base rows (a fold) or
/// one new segment (a merge). Writer thread, inside the step's transaction.
extension Compactor {
    /// Writes the newest record of each key into its base row, in key order.
    static func fold(_ keys: [SegmentKey], _ newest: [SegmentKey: Newest], _ arena: UnsafeRawBufferPointer,
                             _ db: Database, _ result: inout StepResult) throws {
        let update = try db.cachedStatement(sql: """
            UPDATE components SET version = ?, payload = ?, updated_at = NULL WHERE entity_num = ? AND type_id = ?
            """).sqliteStatement
        let insert = try db.cachedStatement(sql: """
            INSERT INTO components (version, payload, entity_num, type_id) VALUES (?, ?, ?, ?)
            """).sqliteStatement
        let delete = try db.cachedStatement(sql: "DELETE FROM components WHERE entity_num = ? AND type_id = ?").sqliteStatement
        let connection = db.sqliteConnection
        for key in keys {
            guard let record = newest[key] else { continue }   // every key listed has its record
            guard let payload = record.payload else {
                sqlite3_bind_int64(delete, 1, key.entity)
                sqlite3_bind_int64(delete, 2, key.typeID)
                try stepDone(delete, db)
                result.baseRowsDeleted += Int(sqlite3_changes(connection))
                continue
            }
            let bytes = UnsafeRawBufferPointer(rebasing: arena[payload])
            for statement in [update, insert] {
                sqlite3_bind_int64(statement, 1, Int64(record.version))
                try bindBlob(statement, 2, bytes)
                sqlite3_bind_int64(statement, 3, key.entity)
                sqlite3_bind_int64(statement, 4, key.typeID)
                try stepDone(statement, db)
                if statement == update && sqlite3_changes(connection) > 0 { break }
                if statement == insert { result.baseRowsInserted += 1 }
            }
            result.keysFolded += 1
        }
    }

    /// Writes the newest record of each key, payloads byte for byte, as one segment under `seq`.
    static func merge(_ keys: [SegmentKey], _ newest: [SegmentKey: Newest], _ arena: UnsafeRawBufferPointer,
                              seq: Int64, createdAt: Int64, _ db: Database, _ result: inout StepResult) throws {
        var encoder = SegmentEncoder()
        var records = keys.compactMap { key in
            newest[key].map { SegmentEncoder.Pending(key: key, version: $0.version, payload: $0.payload) }
        }
        let chunks = encoder.encode(&records, arena: arena)
        result.outputLastID = try Segment.insert(chunks, seq: seq, createdAt: createdAt, db)
        result.outputSizes = chunks.map(\.records.count)
        result.outputCreatedAt = createdAt
        result.outputRows = chunks.count
        result.outputBytes = chunks.reduce(0) { $0 + $1.records.count }
        result.outputRecords = chunks.reduce(0) { $0 + $1.recordCount }
    }
}

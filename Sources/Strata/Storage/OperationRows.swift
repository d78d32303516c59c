import Foundation
import GRDB
import GRDBSQLite

/// The operation log and the vector clock: a row per operation in `operation_log`
/// (appended; one whose id or (node, seq) is there already is ignored), and the vector
/// clock's changed entries in `vector_clock`, after the operations they may claim.
/// Writer thread.
final class OperationRowsPart: BatchPart {
    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        if !batch.operations.isEmpty {
            // Bound by hand, like the entity rows: no Data or StatementArguments per row.
            let insert = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO operation_log (node, seq, id, timestamp, kind, payload, logged_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """).sqliteStatement
            let now = unixMilliseconds()
            for operation in batch.operations {
                try operation.node.withBytes { node in
                    try operation.id.withBytes { id in
                        try operation.payload.withUnsafeBytes { payload in
                            try operation.kind.withCString { kind in
                                bindBlob(insert, 1, node)
                                sqlite3_bind_int64(insert, 2, operation.seq)
                                bindBlob(insert, 3, id)
                                sqlite3_bind_int64(insert, 4, operation.timestamp.rawValue)
                                sqlite3_bind_text(insert, 5, kind, -1, SQLITE_STATIC)
                                bindBlob(insert, 6, payload)
                                sqlite3_bind_int64(insert, 7, now)
                                try stepDone(insert, db)
                            }
                        }
                    }
                }
                counts.operations += Int(sqlite3_changes(db.sqliteConnection))
            }
        }
        if !batch.vectorClockRows.isEmpty {
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO vector_clock (node, seq) VALUES (?, ?) ON CONFLICT (node) DO UPDATE SET seq = excluded.seq
                """)
            for (node, seq) in batch.vectorClockRows {
                try upsert.execute(arguments: [node.withBytes { Data($0) }, seq])
            }
            counts.vectorClockRows += batch.vectorClockRows.count
        }
    }

    func didCommit() {}
    func didRollBack() {}
}

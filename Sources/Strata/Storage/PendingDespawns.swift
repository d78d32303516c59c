import Foundation
import GRDB
import GRDBSQLite

/// Despawns whose rows wait for compaction (schema 15, docs/storage.md).
///
/// A despawn's commit inserts the entity's number into `pending_despawns`: one small
/// B-tree whose few leaves every commit shares, where deleting the entity's row, its id
/// from the id index and its base rows cost three random leaves per despawn (the largest
/// share of a quiet canvas commit's pages). Its jobs and asset files go at once, as
/// before. Compaction later deletes the rows, many at a time (``apply(limit:_:)``).
///
/// Until then the rows are still in `entities` and `components`, and every reader leaves
/// them out: the reload, `strata inspect` and the digest, the history's queries, the job
/// and asset lookups by id, compaction (``live(_:)``). A document that keeps history
/// despawns at once, as before (its window copies the rows as they go).
///
/// Writer thread for the writes; the readers' condition on any thread.
enum PendingDespawns {
    /// Whether the file has the table (an older file a read-only tool opened does not:
    /// its despawns were all applied).
    static func exists(_ db: Database) throws -> Bool { try db.tableExists("pending_despawns") }

    /// The numbers whose despawn waits here (none in an older file).
    static func numbers(_ db: Database) throws -> Set<EntityNumber> {
        guard try exists(db) else { return [] }
        return Set(try EntityNumber.fetchAll(db, sql: "SELECT num FROM pending_despawns"))
    }

    /// A condition that holds for the entity numbered `column` unless its despawn waits
    /// here; `exists` false (an older file): always true.
    static func live(_ column: String, exists: Bool = true) -> String {
        exists ? "\(column) NOT IN (SELECT num FROM pending_despawns)" : "1"
    }

    /// Records the despawns of a commit, and deletes what they own that must not outlive
    /// them: their jobs (a worker must not run one) and their assets (the trigger moves
    /// their files to the trash, removed after the commit). Lookups through indexes: an
    /// entity with neither writes nothing there. Returns how many numbers are new here.
    static func record(_ numbers: [EntityNumber], _ db: Database) throws -> Int {
        var added = 0
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO pending_despawns (num) VALUES (?)").sqliteStatement
        let jobs = try db.cachedStatement(sql: "DELETE FROM jobs WHERE entity_num = ?").sqliteStatement
        let assets = try db.cachedStatement(sql: "DELETE FROM assets WHERE entity_num = ?").sqliteStatement
        for number in numbers {
            for statement in [insert, jobs, assets] {
                sqlite3_bind_int64(statement, 1, number)
                try stepDone(statement, db)
                if statement == insert { added += Int(sqlite3_changes(db.sqliteConnection)) }
            }
        }
        return added
    }

    /// An entity is spawned with the id of one whose despawn waits here (a host that
    /// spawns an id again): that despawn is applied now, so the id is free for the new
    /// row. Returns false if no pending despawn holds the id.
    static func applyHolding(id: UnsafeRawBufferPointer, _ db: Database) throws -> Bool {
        guard let number = try EntityNumber.fetchOne(db, sql: """
            SELECT num FROM entities WHERE id = ? AND num IN (SELECT num FROM pending_despawns)
            """, arguments: [Data(id)]) else { return false }
        try db.execute(sql: "DELETE FROM entities WHERE num = ?", arguments: [number])
        try db.execute(sql: "DELETE FROM pending_despawns WHERE num = ?", arguments: [number])
        return true
    }

    /// Deletes the rows of at most `limit` pending despawns (their base rows go by
    /// `ON DELETE CASCADE`), lowest numbers first, and forgets them. Returns how many
    /// despawns and base rows went. Inside the caller's transaction (a compaction step).
    static func apply(limit: Int, _ db: Database) throws -> (despawns: Int, baseRows: Int) {
        let numbers = try EntityNumber.fetchAll(db, sql: "SELECT num FROM pending_despawns ORDER BY num LIMIT ?", arguments: [limit])
        guard let last = numbers.last else { return (0, 0) }
        let baseRows = try Int.fetchOne(db, sql: """
            SELECT count(*) FROM components WHERE entity_num IN (SELECT num FROM pending_despawns WHERE num <= ?)
            """, arguments: [last]) ?? 0
        try db.execute(sql: "DELETE FROM entities WHERE num IN (SELECT num FROM pending_despawns WHERE num <= ?)", arguments: [last])
        try db.execute(sql: "DELETE FROM pending_despawns WHERE num <= ?", arguments: [last])
        return (numbers.count, baseRows)
    }
}

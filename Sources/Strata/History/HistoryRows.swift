import GRDB
import GRDBSQLite

/// What `[history]` writes beside the segment log, and drops once it falls out of the
/// window. Writer thread.
///
/// - `history_flushes`: one row per commit that changed the world (its time, reasons,
///   keys written, spawns, despawns): `strata history` lists them, and a time in the
///   window means the world after the last of them at or before it.
/// - `despawned_entities`, `despawned_components`: an entity despawned within the window,
///   with its base rows as they were. Its segment records stay in the log (no reload reads
///   them: its entity row is gone), and compaction folds the ones it consumes into
///   `despawned_components` rather than dropping them, so the entity can be rebuilt as it
///   was at any flush before its despawn.
/// - `compaction_state.history_floor`: the time of the newest segment compaction consumed.
///   No earlier flush can be rebuilt: it is where the window starts.
enum HistoryRows {
    /// Copies the rows of the entities `numbers` (despawned by the commit of `at`) before
    /// they are deleted.
    static func keepDespawned(_ numbers: [EntityNumber], at: Int64, _ db: Database) throws {
        let entity = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO despawned_entities (num, id, created_at, despawned_at)
            SELECT num, \(EntityIDColumn.sql()), created_at, ? FROM entities WHERE num = ?
            """).sqliteStatement
        let components = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO despawned_components (entity_num, type_id, version, payload)
            SELECT entity_num, type_id, version, payload FROM components WHERE entity_num = ?
            """).sqliteStatement
        for number in numbers {
            sqlite3_bind_int64(entity, 1, at)
            sqlite3_bind_int64(entity, 2, number)
            try stepDone(entity, db)
            sqlite3_bind_int64(components, 1, number)
            try stepDone(components, db)
        }
    }

    /// Whether `number` is an entity despawned within the window (its records are history).
    static func isDespawnedInWindow(_ number: EntityNumber, _ db: Database) throws -> Bool {
        let statement = try db.cachedStatement(sql: "SELECT 1 FROM despawned_entities WHERE num = ?").sqliteStatement
        sqlite3_bind_int64(statement, 1, number)
        defer { sqlite3_reset(statement) }
        let code = sqlite3_step(statement)
        guard code == SQLITE_ROW || code == SQLITE_DONE else { throw sqliteError(db) }
        return code == SQLITE_ROW
    }

    /// Folds a consumed record of an entity despawned within the window into its kept rows
    /// (`payload` nil: a removal).
    static func fold(_ key: SegmentKey, version: Int, payload: UnsafeRawBufferPointer?, _ db: Database) throws {
        guard let payload else {
            let delete = try db.cachedStatement(sql: "DELETE FROM despawned_components WHERE entity_num = ? AND type_id = ?").sqliteStatement
            sqlite3_bind_int64(delete, 1, key.entity)
            sqlite3_bind_int64(delete, 2, key.typeID)
            try stepDone(delete, db)
            return
        }
        let upsert = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO despawned_components (entity_num, type_id, version, payload) VALUES (?, ?, ?, ?)
            """).sqliteStatement
        sqlite3_bind_int64(upsert, 1, key.entity)
        sqlite3_bind_int64(upsert, 2, key.typeID)
        sqlite3_bind_int64(upsert, 3, Int64(version))
        try bindBlob(upsert, 4, payload)
        try stepDone(upsert, db)
    }

    /// Moves the window's start to `consumedThrough` (the newest segment time a compaction
    /// step consumed) and drops what is older: flushes before it, entities despawned before it.
    static func advanceFloor(to consumedThrough: Int64, _ db: Database) throws {
        try db.execute(sql: "UPDATE compaction_state SET history_floor = max(history_floor, ?) WHERE id = 1",
                       arguments: [consumedThrough])
        let floor = try Int64.fetchOne(db, sql: "SELECT history_floor FROM compaction_state WHERE id = 1") ?? 0
        try db.execute(sql: "DELETE FROM history_flushes WHERE at < ?", arguments: [floor])
        try db.execute(sql: """
            DELETE FROM despawned_components WHERE entity_num IN (SELECT num FROM despawned_entities WHERE despawned_at <= ?)
            """, arguments: [floor])
        try db.execute(sql: "DELETE FROM despawned_entities WHERE despawned_at <= ?", arguments: [floor])
    }
}

/// The batch part that writes a commit's `history_flushes` row (only with `[history]`):
/// last, after everything else the commit writes. Writer thread.
final class HistoryFlushPart: BatchPart {
    let sections: [BatchSection] = []

    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        guard !batch.writes.isEmpty || !batch.entityInserts.isEmpty || !batch.entityDeletes.isEmpty else { return }
        let insert = try db.cachedStatement(sql: """
            INSERT INTO history_flushes (at, reason, keys, spawns, despawns) VALUES (?, ?, ?, ?, ?)
            """)
        try insert.execute(arguments: [counts.committedAt, batch.reasons.map(\.rawValue).joined(separator: ","),
                                        batch.writes.count, batch.entityInserts.count, batch.entityDeletes.count])
    }

    func didCommit() {}
    func didRollBack() {}
}

import GRDB
import GRDBSQLite

/// Entity existence, row by row: a spawn inserts `(num, id)`; a despawn records the
/// entity's number in `pending_despawns` (``PendingDespawns``), and compaction deletes its
/// row later (its base rows go by `ON DELETE CASCADE`, and every segment record that names
/// its number is ignored from the despawn on). With `[history]`, a despawn deletes the
/// rows at once. Writer thread.
///
/// A batch's spawns are inserted in id order: the `UNIQUE` index on the random ids then
/// takes them page by page instead of at random (a world of a million growing by 200,000
/// a second had every commit rewrite the whole index, many times over).
final class EntityRowsPart: BatchPart {
    let sections: [BatchSection] = [.entityDeletes, .entityInserts]
    /// `[history]` is kept: a despawned entity's row and base rows are copied first
    /// (`Sources/Strata/History`), so the window can still rebuild it.
    let history: Bool
    /// Where the pending despawns are counted (for compaction), once the commit is final.
    let log: SegmentLog?
    /// The open transaction's change to that count.
    private var pendingChange = 0

    init(history: Bool = false, log: SegmentLog? = nil) {
        self.history = history
        self.log = log
    }

    /// A batch's spawns, sorted by id (reused).
    private var sorted: [EntityInsert] = []

    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        if !batch.entityDeletes.isEmpty {
            if history {
                try HistoryRows.keepDespawned(batch.entityDeletes, at: counts.committedAt, db)
                let delete = try db.cachedStatement(sql: "DELETE FROM entities WHERE num = ?").sqliteStatement
                for number in batch.entityDeletes {
                    sqlite3_bind_int64(delete, 1, number)
                    try stepDone(delete, db)
                }
            } else {
                pendingChange += try PendingDespawns.record(batch.entityDeletes, db)
            }
            counts.entityDeletes += batch.entityDeletes.count
        }
        if !batch.entityInserts.isEmpty {
            let insert = try db.cachedStatement(sql: "INSERT INTO entities (num, id, created_at) VALUES (?, ?, ?)").sqliteStatement
            let now = counts.committedAt
            sorted.removeAll(keepingCapacity: true)
            sorted.append(contentsOf: batch.entityInserts)
            if sorted.count > 1 { sorted.sort { x, y in x.id.withBytes { a in y.id.withBytes { b in a.lexicographicallyPrecedes(b) } } } }
            for row in sorted {
                try row.id.withBytes { id in
                    sqlite3_bind_int64(insert, 1, row.number)
                    try checkBind(sqlite3_bind_blob(insert, 2, id.baseAddress, 16, SQLITE_STATIC), 2)
                    sqlite3_bind_int64(insert, 3, now)
                    do {
                        try stepDone(insert, db)
                    } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                        // The id is spawned again while an earlier entity of it waits for
                        // compaction: that one's rows go now. The bindings outlive the reset.
                        guard try PendingDespawns.applyHolding(id: id, db) else { throw error }
                        pendingChange -= 1
                        try stepDone(insert, db)
                    }
                }
            }
            counts.entityInserts += batch.entityInserts.count
        }
    }

    func didCommit() {
        log?.pendingDespawns += pendingChange
        pendingChange = 0
    }

    func didRollBack() { pendingChange = 0 }
}

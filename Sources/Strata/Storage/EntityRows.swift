import GRDB
import GRDBSQLite

/// Entity existence, row by row (``PendingEntities``): a commit of a few spawns appends
/// them to `pending_entities`, and compaction moves them into `entities` later; a commit of
/// many inserts them into `entities` at once, in id order (the `UNIQUE` index on the ids
/// then takes them page by page instead of at random: a world of a million growing by
/// 200,000 a second had every commit rewrite the whole index, many times over). A commit of
/// a few despawns records their numbers in `pending_entities`, and compaction deletes the
/// rows later; a commit of many deletes them at once (base rows go by `ON DELETE CASCADE`,
/// and every segment record that names a despawned number is ignored from the despawn on).
/// With `[history]`, spawns and despawns write `entities` at once. Writer thread.
final class EntityRowsPart: BatchPart {
    let sections: [BatchSection] = [.entityDeletes, .entityInserts]
    /// `[history]` is kept: a despawned entity's row and base rows are copied first
    /// (`Sources/Strata/History`), so the window can still rebuild it.
    let history: Bool
    /// Where the waiting spawns and despawns are counted (for compaction), once the commit is final.
    let log: SegmentLog?
    /// The open transaction's change to those counts.
    private var pendingChange = (spawns: 0, despawns: 0)

    /// The most spawns a commit appends to `pending_entities`; more go to `entities` at once,
    /// sorted: there they fill pages of their own, and the waiting table stays a few pages
    /// (lookups by id read all of it).
    static let waitingSpawnsPerCommit = 64
    /// The most despawns a commit records in `pending_entities`; more (a level unloaded)
    /// delete their rows at once, in number order, as a despawn did before schema 15: the
    /// table stays a few pages, so that reading all of it (a lookup, a compaction step)
    /// stays cheap.
    static let waitingDespawnsPerCommit = 64

    init(history: Bool = false, log: SegmentLog? = nil) {
        self.history = history
        self.log = log
    }

    /// A batch's spawns, sorted (reused).
    private var sorted: [EntityInsert] = []

    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        if !batch.entityDeletes.isEmpty {
            if history || batch.entityDeletes.count > Self.waitingDespawnsPerCommit {
                // Spawns still waiting (one of these among them, or left by a session
                // without history) are rows first.
                note(try PendingEntities.promoteSpawns(db))
                if history { try HistoryRows.keepDespawned(batch.entityDeletes, at: counts.committedAt, db) }
                let delete = try db.cachedStatement(sql: "DELETE FROM entities WHERE num = ?").sqliteStatement
                // Highest first: `replica.numbers_through`'s trigger then updates its row once,
                // not once a row (`EntityIDColumn.numbersThroughTriggers`).
                for number in batch.entityDeletes.sorted(by: >) {
                    sqlite3_bind_int64(delete, 1, number)
                    try stepDone(delete, db)
                }
            } else {
                pendingChange.despawns += try PendingEntities.recordDespawns(batch.entityDeletes, db)
            }
            counts.entityDeletes += batch.entityDeletes.count
        }
        if !batch.entityInserts.isEmpty {
            // The spawn's time is read by the history's queries alone (spawned by then?):
            // without `[history]` it is 0, which SQLite stores in no bytes (a time took
            // six of a derived entity's dozen), and which a window opened later reads
            // right: the entity was there before the window began.
            let now = history ? counts.committedAt : 0
            sorted.removeAll(keepingCapacity: true)
            sorted.append(contentsOf: batch.entityInserts)
            if !history && sorted.count <= Self.waitingSpawnsPerCommit {
                if sorted.count > 1 { sorted.sort { $0.number < $1.number } }
                try PendingEntities.recordSpawns(sorted, at: now, db)
                pendingChange.spawns += sorted.count
            } else {
                if sorted.count > 1 { sorted.sort { x, y in x.id.withBytes { a in y.id.withBytes { b in a.lexicographicallyPrecedes(b) } } } }
                pendingChange.despawns -= try PendingEntities.insertEntities(sorted, at: { _ in now }, db)
            }
            counts.entityInserts += batch.entityInserts.count
        }
    }

    private func note(_ change: (spawns: Int, despawns: Int)) {
        pendingChange.spawns += change.spawns
        pendingChange.despawns += change.despawns
    }

    func didCommit() {
        log?.pendingSpawns += pendingChange.spawns
        log?.pendingDespawns += pendingChange.despawns
        pendingChange = (0, 0)
    }

    func didRollBack() { pendingChange = (0, 0) }
}

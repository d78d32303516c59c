import Foundation
import GRDB

/// The `jobs` table's SQL. Runs on the writer connection (inside ``WriterRequest``s), or
/// on the opening thread before the writer starts (``recoverInterrupted(_:now:maxAttempts:)``).
enum JobRows {
    static let columns = """
        jobs.id, jobs.entity_num, \(EntityIDColumn.sql()) AS entity_id, jobs.kind, jobs.payload, jobs.priority, jobs.status, jobs.attempts,
        jobs.last_error, jobs.created_at, jobs.started_at, jobs.finished_at, jobs.not_before
        """

    /// A row of ``columns``, read by position (a lookup by name lowercases the name each time);
    /// nil if a value does not read as its column's type (the row stays in the file).
    static func job(_ row: Row) -> Job? { try? decodeJob(row) }

    private static func decodeJob(_ row: Row) throws -> Job? {
        guard let entity = try row.decode(Data?.self, atIndex: 2).flatMap({ data in data.withUnsafeBytes { EntityID(bytes: $0) } }),
              let status = Job.Status(rawValue: try row.decode(String.self, atIndex: 6))
        else { return nil }
        return Job(id: try row.decode(atIndex: 0), entity: entity, kind: try row.decode(atIndex: 3),
                   payload: [UInt8](try row.decode(Data.self, atIndex: 4)), priority: try row.decode(atIndex: 5),
                   status: status, attempts: try row.decode(atIndex: 7), lastError: try row.decode(atIndex: 8),
                   createdAt: try row.decode(atIndex: 9), startedAt: try row.decode(atIndex: 10),
                   finishedAt: try row.decode(atIndex: 11), notBefore: try row.decode(atIndex: 12))
    }

    static func fetch(_ db: Database, where condition: String, _ arguments: StatementArguments = [],
                      order: String = "jobs.id", limit: Int? = nil) throws -> [Job] {
        try fetchNumbered(db, where: condition, arguments, order: order, limit: limit).map(\.job)
    }

    /// The jobs with their entities' numbers in the file.
    static func fetchNumbered(_ db: Database, where condition: String, _ arguments: StatementArguments = [],
                              order: String = "jobs.id", limit: Int? = nil) throws -> [(job: Job, entity: EntityNumber)] {
        let sql = "SELECT \(columns) FROM jobs JOIN entities ON entities.num = jobs.entity_num WHERE \(condition) ORDER BY \(order)"
            + (limit.map { " LIMIT \($0)" } ?? "")
        // Cached: the hot calls (one job by id, by entity and kind) are the same few statements.
        return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).compactMap { row in
            job(row).flatMap { job in (try? row.decode(EntityNumber.self, atIndex: 1)).map { (job, $0) } }
        }
    }

    /// Adds the job unless the entity has one of this kind already. Returns whether the
    /// entity is in the file (false: not yet, nothing written). Without reading the job back.
    /// What ``add(_:kind:entity:payload:priority:now:)`` did.
    enum Added {
        /// Added, or the entity had one of this kind already.
        case added
        /// The entity's row is not in the file yet: its spawn comes with a later batch.
        case notYet
        /// The entity's row is there and despawned (its despawn waits for compaction): the
        /// job would go with it, so it is not added.
        case entityDespawned
    }

    static func add(_ db: Database, kind: String, entity: EntityID, payload: [UInt8], priority: Int, now: Int64) throws -> Added {
        _ = try PendingEntities.promote(id: entity.withBytes { Data($0) }, db)   // the job refers to `entities`
        let match = EntityIDColumn.matching(), id = try EntityIDColumn.arguments(for: entity, db)
        try db.cachedStatement(sql: """
            INSERT INTO jobs (entity_num, kind, payload, priority, status, created_at, not_before)
            SELECT num, ?, ?, ?, 'pending', ?, 0 FROM entities WHERE \(match) AND \(PendingEntities.Layout.current.live("num"))
            ON CONFLICT (entity_num, kind) DO NOTHING
            """).execute(arguments: [kind, Data(payload), priority, now] + id)
        if db.changesCount > 0 { return .added }
        if try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM entities WHERE \(match) AND \(PendingEntities.Layout.current.live("num"))"), arguments: id) != nil {
            return .added
        }
        return try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM entities WHERE \(match)"), arguments: id) != nil ? .entityDespawned : .notYet
    }

    /// Adds the job unless the entity has one of this kind already; returns the job either
    /// way, or nil if the entity is not in the file (yet).
    static func enqueue(_ db: Database, kind: String, entity: EntityID, payload: [UInt8], priority: Int, now: Int64) throws -> Job? {
        _ = try PendingEntities.promote(id: entity.withBytes { Data($0) }, db)
        let match = EntityIDColumn.matching(), id = try EntityIDColumn.arguments(for: entity, db)
        try db.cachedStatement(sql: """
            INSERT INTO jobs (entity_num, kind, payload, priority, status, created_at, not_before)
            SELECT num, ?, ?, ?, 'pending', ?, 0 FROM entities WHERE \(match) AND \(PendingEntities.Layout.current.live("num"))
            ON CONFLICT (entity_num, kind) DO NOTHING
            """).execute(arguments: [kind, Data(payload), priority, now] + id)
        return try fetch(db, where: "\(match) AND jobs.kind = ?", id + [kind]).first
    }

    /// Marks up to `limit` runnable jobs of `kinds` processing (one transaction: no job
    /// goes to two claims), by priority, then age. Runnable: pending, or failed and past
    /// its backoff.
    static func claim(_ db: Database, kinds: [String], limit: Int, now: Int64) throws -> [(job: Job, entity: EntityNumber)] {
        var candidates: [(priority: Int, id: Int64)] = []
        // One indexed range per (kind, status): each read stops after `limit` rows.
        let pick = try db.cachedStatement(sql: """
            SELECT id, priority FROM jobs WHERE kind = ? AND status = ? AND not_before <= ? ORDER BY priority DESC, id LIMIT ?
            """)
        for kind in kinds {
            for status in ["pending", "failed"] {
                for row in try Row.fetchAll(pick, arguments: [kind, status, now, limit]) {
                    // A priority that does not read (damage) runs the job at 0, never a failed claim.
                    candidates.append((row.value("priority") ?? 0, try row.decode(forColumn: "id")))
                }
            }
        }
        let chosen = candidates.sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.id < $1.id }.prefix(limit).map(\.id)
        let mark = try db.cachedStatement(sql: "UPDATE jobs SET status = 'processing', started_at = ?, attempts = attempts + 1 WHERE id = ?")
        var claimed: [(job: Job, entity: EntityNumber)] = []
        claimed.reserveCapacity(chosen.count)
        for id in chosen {
            try mark.execute(arguments: [now, id])
            claimed += try fetchNumbered(db, where: "jobs.id = ?", [id])
        }
        return claimed
    }

    /// A run finished: the row goes, or stays as `done` for `keep` (and older `done` rows go).
    /// False if the job was not processing (cancelled, or gone with its entity, meanwhile).
    static func complete(_ db: Database, id: Job.ID, now: Int64, keep: Duration) throws -> Bool {
        if keep == .zero {
            try db.cachedStatement(sql: "DELETE FROM jobs WHERE id = ? AND status = 'processing'").execute(arguments: [id])
        } else {
            try db.cachedStatement(sql: "UPDATE jobs SET status = 'done', finished_at = ?, last_error = NULL WHERE id = ? AND status = 'processing'")
                .execute(arguments: [now, id])
        }
        let changed = db.changesCount > 0
        if keep > .zero {
            try db.cachedStatement(sql: "DELETE FROM jobs WHERE status = 'done' AND finished_at < ?")
                .execute(arguments: [now - Int64(keep.milliseconds)])
        }
        return changed
    }

    /// A run failed: `dead` after `maxAttempts` runs, otherwise `failed` until the backoff passes.
    static func fail(_ db: Database, id: Job.ID, error: String, now: Int64, maxAttempts: Int,
                     backoff: (Int) -> Duration) throws -> Job.Status? {
        guard let attempts = try Int.fetchOne(db, sql: "SELECT attempts FROM jobs WHERE id = ? AND status = 'processing'", arguments: [id])
        else { return nil }
        let dead = attempts >= maxAttempts
        try db.execute(sql: """
            UPDATE jobs SET status = ?, last_error = ?, finished_at = ?, not_before = ? WHERE id = ?
            """, arguments: [dead ? "dead" : "failed", error, now, dead ? 0 : now + Int64(backoff(attempts).milliseconds), id])
        return dead ? .dead : .failed
    }

    /// Back to pending with a fresh count of attempts (a person's retry). Returns how many.
    static func retry(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> Int {
        try db.execute(sql: """
            UPDATE jobs SET status = 'pending', attempts = 0, not_before = 0, finished_at = NULL
            WHERE status IN ('failed', 'dead', 'done') AND \(condition)
            """, arguments: arguments)
        return db.changesCount
    }

    /// Removes jobs; returns the ids removed (a running one's handler is told by the pool).
    static func cancel(_ db: Database, where condition: String, _ arguments: StatementArguments) throws -> [Job.ID] {
        let ids = try Int64.fetchAll(db, sql: "SELECT id FROM jobs WHERE \(condition)", arguments: arguments)
        guard !ids.isEmpty else { return [] }
        try db.execute(sql: "DELETE FROM jobs WHERE id IN (\(ids.map(String.init).joined(separator: ", ")))")
        return ids
    }

    /// Jobs a shutdown could not wait for go back to pending, their run not counted.
    static func release(_ db: Database, ids: [Job.ID]) throws {
        guard !ids.isEmpty else { return }
        try db.execute(sql: """
            UPDATE jobs SET status = 'pending', started_at = NULL, attempts = max(attempts - 1, 0)
            WHERE status = 'processing' AND id IN (\(ids.map(String.init).joined(separator: ", ")))
            """)
    }

    /// At open: jobs a crashed session left `processing` were interrupted. Their run
    /// counts; they are `failed` ("interrupted") and run again at once, or `dead` if that
    /// was their last attempt. Returns how many.
    ///
    /// Found through `jobs_claim` (kind, status, …) one kind at a time, the kinds read by
    /// seeking past each in that index: a few lookups whatever the backlog, and no index
    /// of its own for the claims and completions to keep up.
    static func recoverInterrupted(_ db: Database, now: Int64, maxAttempts: Int) throws -> Int {
        guard try db.tableExists("jobs") else { return 0 }
        let nextKind = try db.makeStatement(sql: "SELECT kind FROM jobs WHERE kind > ? ORDER BY kind LIMIT 1")
        let mark = try db.makeStatement(sql: """
            UPDATE jobs SET status = CASE WHEN attempts >= ? THEN 'dead' ELSE 'failed' END,
                            last_error = 'interrupted', finished_at = ?, not_before = 0
            WHERE kind = ? AND status = 'processing'
            """)
        var recovered = 0
        var kind = ""
        while let next = try String.fetchOne(nextKind, arguments: [kind]) {
            try mark.execute(arguments: [maxAttempts, now, next])
            recovered += db.changesCount
            kind = next
        }
        return recovered
    }

    /// Retention: deletes at most `limit` jobs of `status` that finished before `before`
    /// (Unix ms; `dead` and `done` only). Returns how many.
    static func deleteFinished(_ db: Database, status: Job.Status, before: Int64, limit: Int) throws -> Int {
        precondition(status == .dead || status == .done, "only finished jobs are deleted by age")
        try db.execute(sql: """
            DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status = ? AND finished_at < ? LIMIT ?)
            """, arguments: [status.rawValue, before, limit])
        return db.changesCount
    }

    static func counts(_ db: Database) throws -> [Job.Status: Int] {
        var result: [Job.Status: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT status, count(*) AS n FROM jobs GROUP BY status") {
            if let status = (try? row.decode(String.self, forColumn: "status")).flatMap(Job.Status.init(rawValue:)) {
                result[status] = try row.decode(forColumn: "n")
            }
        }
        return result
    }
}

import GRDB

/// What one maintenance step does on the writer's connection (the writer decides when:
/// `MaintenanceTask.swift`). Each is one transaction or one pragma, bounded.
enum MaintenanceSteps {
    /// The file's pages, free pages and auto_vacuum mode (2: incremental).
    struct FileStats: Equatable, Sendable {
        var pages = 0
        var freePages = 0
        var autoVacuum = 0
        /// `none`, `full` or `incremental`.
        var autoVacuumName: String { ["none", "full", "incremental"][min(max(autoVacuum, 0), 2)] }
    }

    static func fileStats(_ db: Database) throws -> FileStats {
        FileStats(pages: try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0,
                  freePages: try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0,
                  autoVacuum: try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0)
    }

    /// How many rows of each kind one retention step deleted.
    struct Retained: Equatable, Sendable {
        var jobs = 0
        var rejectedWrites = 0
        var total: Int { jobs + rejectedWrites }
    }

    /// One transaction deleting at most `limit` rows past their configured age: dead jobs
    /// (`keep_dead_jobs_secs`), finished jobs (`[jobs] keep_finished_secs`), parked
    /// rejected writes (`keep_rejected_writes_secs`); an age of zero keeps them. Never a
    /// pending, failed or running job, and never an operation (the log's own retention,
    /// by acknowledgement, runs with the commits).
    static func retention(_ db: Database, config: MaintenanceConfig, keepFinishedJobs: Duration, now: Int64,
                          limit: Int) throws -> Retained {
        var deleted = Retained()
        try db.inTransaction(.immediate) {
            for (status, keep) in [(Job.Status.dead, config.keepDeadJobs), (.done, keepFinishedJobs)] where keep > .zero {
                guard deleted.total < limit else { break }
                deleted.jobs += try JobRows.deleteFinished(db, status: status, before: now - Int64(keep.milliseconds),
                                                           limit: limit - deleted.total)
            }
            if config.keepRejectedWrites > .zero, deleted.total < limit {
                deleted.rejectedWrites = try RejectedRows.deleteParked(
                    db, before: now - Int64(config.keepRejectedWrites.milliseconds), limit: limit - deleted.total)
            }
            return .commit
        }
        return deleted
    }

    /// Returns at most `pages` free pages to the filesystem (a file in incremental mode).
    static func incrementalVacuum(_ db: Database, pages: Int) throws {
        try db.execute(sql: "PRAGMA incremental_vacuum(\(pages))")
    }

    /// `PRAGMA optimize` (ANALYZE where the statistics are missing or stale), its reads
    /// bounded by `analysis_limit`: SQLite 3.40 does not bound its own work before 3.46.
    static func optimize(_ db: Database, analysisLimit: Int) throws {
        try db.execute(sql: "PRAGMA analysis_limit = \(analysisLimit); PRAGMA optimize")
    }
}

import Foundation
import GRDB

/// Maintenance on the writer thread: retention, free pages returned to the filesystem,
/// and statistics, between batches, one bounded step at a time (as compaction's steps,
/// which go first): a batch that arrives waits for one step at most. When a round runs
/// is ``MaintenancePolicy``'s decision (idle on mains; on battery only past the hard
/// limits); `maintainNow()` forces one.
///
/// - retention: one transaction deleting at most `retention_step_rows` of dead jobs
///   older than `keep_dead_jobs_secs`, finished jobs older than `[jobs]
///   keep_finished_secs`, and parked rejected writes older than
///   `keep_rejected_writes_secs` (0: kept). Never a pending, failed or running job, and
///   never an operation: the operation log's retention (only what every peer
///   acknowledged) runs with the commits.
/// - vacuum: `PRAGMA incremental_vacuum(vacuum_step_pages)` until no page is free, in a
///   file with `auto_vacuum = INCREMENTAL` (new files; older ones after `strata maintain
///   --vacuum`).
/// - optimize: `PRAGMA analysis_limit`, then `PRAGMA optimize` (also at every clean
///   shutdown).
struct MaintenanceState {
    /// The engine's clock when the writer was made: the first round waits a little after it.
    var openedAt: Instant
    /// The tasks left of the round in progress (nil: none), and whether it was forced.
    var round: [MaintenancePolicy.Task]?
    var forcedTicket: Int?
    var lastRound: Instant?
    /// The file's pages and free pages (bytes) and its auto_vacuum mode, read at most every
    /// few seconds; and whether the file was past `size_warning_mb` at the last round.
    var fileBytes = 0
    var freeBytes = 0
    var incrementalVacuum = false
    var statsReadAt = Date.distantPast
    var sizeWarned = false
    var failures = 0
    var retryAt: Date?

    init(openedAt: Instant) {
        self.openedAt = openedAt
    }
}

extension Writer {
    /// Runs a maintenance round now, whatever the power (after the batches handed so
    /// far), and waits for it. False if `timeout` passed first or the writer stopped.
    func maintainNow(timeout: Duration) -> Bool {
        requestAndWait(\.forcedMaintenanceRequested, served: \.forcedMaintenanceServed, timeout: timeout) { _ in true }
    }

    /// The task of the step to run now, if any (starting a round if one is due). Writer thread.
    func maintenanceDue() -> MaintenancePolicy.Task? {
        if let retry = maintenance.retryAt {
            guard Date() >= retry else { return nil }
            maintenance.retryAt = nil
        }
        let (context, requested) = controlLock.withLock { (compactionContext, forcedMaintenanceRequested) }
        if maintenance.round == nil {
            if requested > forcedMaintenanceServedNow() {
                maintenance.round = MaintenancePolicy.Task.allCases
                maintenance.forcedTicket = requested
                readFileStats()
            } else {
                if Date().timeIntervalSince(maintenance.statsReadAt) >= 5 { readFileStats() }
                let policy = MaintenancePolicy(config: settings.maintenance)
                let tasks = policy.due(MaintenancePolicy.Input(
                    now: clock.now(), lastRound: maintenance.lastRound, onMains: context?.onMains ?? false,
                    idle: context?.idle ?? false, fileBytes: maintenance.fileBytes, freeBytes: maintenance.freeBytes,
                    incrementalVacuum: maintenance.incrementalVacuum, sizeWarned: maintenance.sizeWarned), openedAt: maintenance.openedAt)
                guard !tasks.isEmpty else { return nil }
                if maintenance.fileBytes > settings.maintenance.sizeWarningBytes && !maintenance.sizeWarned {
                    logger.warning("""
                        maintenance: the file is \(maintenance.fileBytes / 1024 / 1024) MB, past size_warning_mb \
                        (\(settings.maintenance.sizeWarningBytes / 1024 / 1024) MB): cleaning up now
                        """)
                }
                maintenance.round = tasks
            }
        }
        return maintenance.round?.first
    }

    private func forcedMaintenanceServedNow() -> Int {
        controlLock.withLock { forcedMaintenanceServed }
    }

    /// Runs one step of `task`; the task stays first in the round until it has nothing left to do.
    func runMaintenanceStep(_ task: MaintenancePolicy.Task) {
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        var done = true
        var deleted = 0, vacuumed = 0
        do {
            switch task {
            case .retention:
                deleted = try retentionStep()
                done = deleted < settings.maintenance.retentionStepRows
            case .vacuum:
                vacuumed = try vacuumStep()
                done = vacuumed == 0 || maintenance.freeBytes == 0
            case .optimize:
                try optimize()
            }
        } catch {
            maintenance.failures += 1
            let wait = min(settings.retryInitialBackoff * (1 << min(maintenance.failures - 1, 20)), settings.retryMaxBackoff)
            maintenance.retryAt = Date(timeIntervalSinceNow: wait.seconds)
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            if reportIfCorrupt(storeError) { return }
            logger.warning("maintenance: \(task.rawValue) step failed (attempt \(maintenance.failures)), will retry: \(storeError)")
            metrics.update { $0.failedMaintenanceSteps += 1 }
            if maintenance.failures >= settings.shutdownAttempts { finishMaintenanceRound() }
            return
        }
        maintenance.failures = 0
        let elapsed = stopwatch.now().duration(since: started)
        metrics.update {
            $0.maintenanceSteps += 1
            $0.retentionRowsDeleted += deleted
            $0.pagesVacuumed += vacuumed
            if task == .optimize { $0.optimizeRuns += 1 }
            $0.totalMaintenanceDuration += elapsed
            $0.maxMaintenanceStepDuration = max($0.maxMaintenanceStepDuration, elapsed)
        }
        if done {
            maintenance.round?.removeFirst()
            if maintenance.round?.isEmpty == true { finishMaintenanceRound() }
        }
    }

    private func finishMaintenanceRound() {
        readFileStats()
        maintenance.sizeWarned = maintenance.fileBytes > settings.maintenance.sizeWarningBytes
        maintenance.round = nil
        maintenance.lastRound = clock.now()
        maintenance.failures = 0
        metrics.update { $0.maintenanceRounds += 1 }
        if let ticket = maintenance.forcedTicket {
            maintenance.forcedTicket = nil
            controlLock.withLock {
                forcedMaintenanceServed = max(forcedMaintenanceServed, ticket)
                controlLock.broadcast()
            }
        }
    }

    /// The file's size, free pages and auto_vacuum mode, into the state and the metrics.
    func readFileStats() {
        guard let (pages, free, mode) = try? store.withConnection({ db in
            (try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0,
             try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0,
             try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0)
        }) else { return }
        maintenance.fileBytes = pages * settings.pageSize
        maintenance.freeBytes = free * settings.pageSize
        maintenance.incrementalVacuum = mode == 2
        maintenance.statsReadAt = Date()
        let (file, freeBytes, warning) = (maintenance.fileBytes, maintenance.freeBytes, maintenance.fileBytes > settings.maintenance.sizeWarningBytes)
        metrics.update {
            $0.fileBytes = file
            $0.freeBytes = freeBytes
            $0.fileSizeWarning = warning
        }
    }

    /// One transaction: rows past their configured age, at most `retention_step_rows`.
    private func retentionStep() throws -> Int {
        let config = settings.maintenance
        let now = settings.wallClock()
        let limit = config.retentionStepRows
        return try store.withConnection { db in
            var deleted = 0
            try db.inTransaction(.immediate) {
                if config.keepDeadJobs > .zero {
                    try db.execute(sql: """
                        DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status = 'dead' AND finished_at < ? LIMIT ?)
                        """, arguments: [now - Int64(config.keepDeadJobs.milliseconds), limit])
                    deleted += db.changesCount
                }
                if settings.keepFinishedJobs > .zero, deleted < limit {
                    try db.execute(sql: """
                        DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE status = 'done' AND finished_at < ? LIMIT ?)
                        """, arguments: [now - Int64(settings.keepFinishedJobs.milliseconds), limit - deleted])
                    deleted += db.changesCount
                }
                if config.keepRejectedWrites > .zero, deleted < limit {
                    try db.execute(sql: """
                        DELETE FROM rejected_writes WHERE id IN (SELECT id FROM rejected_writes WHERE rejected_at < ? LIMIT ?)
                        """, arguments: [now - Int64(config.keepRejectedWrites.milliseconds), limit - deleted])
                    let rejected = db.changesCount
                    if rejected > 0 {
                        logger.notice("maintenance: \(rejected) parked rejected writes older than keep_rejected_writes_secs deleted")
                    }
                    deleted += rejected
                }
                return .commit
            }
            return deleted
        }
    }

    /// One `PRAGMA incremental_vacuum` step; the pages it returned (0: nothing to do, or
    /// the file is not in incremental mode).
    private func vacuumStep() throws -> Int {
        readFileStats()
        guard maintenance.incrementalVacuum, maintenance.freeBytes > 0 else { return 0 }
        let before = maintenance.freeBytes
        try store.withConnection { db in
            try db.execute(sql: "PRAGMA incremental_vacuum(\(settings.maintenance.vacuumStepPages))")
        }
        readFileStats()
        return max(0, (before - maintenance.freeBytes) / settings.pageSize)
    }

    /// `PRAGMA optimize`, its ANALYZE bounded by `analysis_limit`.
    private func optimize() throws {
        try store.withConnection { db in
            try db.execute(sql: "PRAGMA analysis_limit = \(settings.maintenance.analysisLimit); PRAGMA optimize")
        }
    }

    /// At a clean shutdown (SQLite's advice: optimize before closing); a failure is only logged.
    func optimizeAtShutdown() {
        do {
            try optimize()
        } catch {
            logger.notice("maintenance: PRAGMA optimize at shutdown failed: \(error)")
        }
    }
}

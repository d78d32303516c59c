import Foundation

/// Maintenance on the writer thread: retention, free pages returned to the filesystem,
/// and statistics, between batches, one bounded step at a time (as compaction's steps,
/// which go first): a batch that arrives waits for one step at most. When a round runs
/// is ``MaintenancePolicy``'s decision (idle on mains; on battery only past the hard
/// limits); `maintainNow()` forces one. What a step does is `Maintenance/MaintenanceSteps.swift`.
struct MaintenanceState {
    /// The engine's clock when the writer was made: the first round waits a little after it.
    var openedAt: Instant
    /// The tasks left of the round in progress (nil: none), and whether it was forced.
    var round: [MaintenancePolicy.Task]?
    var forcedTicket: Int?
    var lastRound: Instant?
    /// The file's pages, free pages and auto_vacuum mode, read at most every
    /// `statsInterval` of the engine's clock; and whether the file was past
    /// `size_warning_mb` at the last round.
    var stats = MaintenanceSteps.FileStats()
    var statsReadAt: Instant?
    var sizeWarned = false
    var failures = 0
    var retryAt: Date?

    static let statsInterval: Duration = .seconds(5)

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
        let (context, requested, served) = controlLock.withLock {
            (compactionContext, forcedMaintenanceRequested, forcedMaintenanceServed)
        }
        if maintenance.round == nil {
            var tasks = MaintenancePolicy.Task.allCases
            if requested > served {
                maintenance.forcedTicket = requested
            } else {
                if maintenance.statsReadAt.map({ clock.now() >= $0 + MaintenanceState.statsInterval }) ?? true { readFileStats() }
                tasks = MaintenancePolicy(config: settings.maintenance).due(MaintenancePolicy.Input(
                    now: clock.now(), lastRound: maintenance.lastRound, onMains: context?.onMains ?? false,
                    idle: context?.idle ?? false, fileBytes: fileBytes, freeBytes: freeBytes,
                    incrementalVacuum: maintenance.stats.autoVacuum == 2, sizeWarned: maintenance.sizeWarned),
                    openedAt: maintenance.openedAt)
                guard !tasks.isEmpty else { return nil }
                if fileBytes > settings.maintenance.sizeWarningBytes && !maintenance.sizeWarned {
                    logger.warning("""
                        maintenance: the file is \(fileBytes / 1024 / 1024) MB, past size_warning_mb \
                        (\(settings.maintenance.sizeWarningBytes / 1024 / 1024) MB): cleaning up now
                        """)
                }
            }
            maintenance.round = tasks
            readFileStats()   // the round's vacuum starts from the file as it is now
        }
        return maintenance.round?.first
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
                let retained = try store.withConnection { db in
                    try MaintenanceSteps.retention(db, config: settings.maintenance, keepFinishedJobs: settings.keepFinishedJobs,
                                                   now: settings.wallClock(), limit: settings.maintenance.retentionStepRows)
                }
                if retained.rejectedWrites > 0 {
                    logger.notice("maintenance: \(retained.rejectedWrites) parked rejected writes older than keep_rejected_writes_secs deleted")
                }
                deleted = retained.total
                done = deleted < settings.maintenance.retentionStepRows
            case .vacuum:
                vacuumed = try vacuumStep()
                done = vacuumed == 0 || maintenance.stats.freePages == 0
            case .optimize:
                try store.withConnection { db in try MaintenanceSteps.optimize(db, analysisLimit: settings.maintenance.analysisLimit) }
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
        maintenance.sizeWarned = fileBytes > settings.maintenance.sizeWarningBytes
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

    private var fileBytes: Int { maintenance.stats.pages * settings.pageSize }
    private var freeBytes: Int { maintenance.stats.freePages * settings.pageSize }

    /// The file's size, free pages and auto_vacuum mode, into the state and the metrics.
    func readFileStats() {
        guard let stats = try? store.withConnection({ try MaintenanceSteps.fileStats($0) }) else { return }
        maintenance.stats = stats
        maintenance.statsReadAt = clock.now()
        let (file, free, warning) = (fileBytes, freeBytes, fileBytes > settings.maintenance.sizeWarningBytes)
        metrics.update {
            $0.fileBytes = file
            $0.freeBytes = free
            $0.fileSizeWarning = warning
        }
    }

    /// One `PRAGMA incremental_vacuum` step; the pages it returned (0: nothing to do, or
    /// the file is not in incremental mode). The stats are those the last step left.
    private func vacuumStep() throws -> Int {
        guard maintenance.stats.autoVacuum == 2, maintenance.stats.freePages > 0 else { return 0 }
        let before = maintenance.stats.freePages
        try store.withConnection { db in try MaintenanceSteps.incrementalVacuum(db, pages: settings.maintenance.vacuumStepPages) }
        readFileStats()
        return max(0, before - maintenance.stats.freePages)
    }

    /// At a clean shutdown (SQLite's advice: optimize before closing); a failure is only logged.
    func optimizeAtShutdown() {
        do {
            try store.withConnection { db in try MaintenanceSteps.optimize(db, analysisLimit: settings.maintenance.analysisLimit) }
        } catch {
            logger.notice("maintenance: PRAGMA optimize at shutdown failed: \(error)")
        }
    }
}

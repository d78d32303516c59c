import Foundation

/// Maintenance on the writer thread: retention, free pages returned to the filesystem,
/// and statistics, between batches, one bounded step at a time (as compaction's steps,
/// which go first): a batch that arrives waits for one step at most. When a round runs
/// is ``MaintenancePolicy``'s decision (idle on mains; on battery only past the hard
/// limits); `maintainNow()` forces one. What a step does is `Maintenance/MaintenanceSteps.swift`.
///
/// Writer thread, but for ``forced`` (its own lock).
final class MaintenanceTask: RoundTask {
    let context: WriterContext
    /// `maintainNow()`: a round whatever the power, waited for.
    let forced = ForcedRounds()
    /// The writer's clock when the task was made: the first round waits a little after it.
    let openedAt: Instant
    /// The tasks left of the round in progress (nil: none), and whether it was forced.
    var round: [MaintenancePolicy.Task]?
    var forcedTicket: Int?
    var lastRound: Instant?
    /// The file's pages, free pages and auto_vacuum mode, read at most every
    /// `statsInterval` of the writer's clock; and whether the file was past
    /// `size_warning_mb` at the last round.
    var stats = MaintenanceSteps.FileStats()
    var statsReadAt: Instant?
    var sizeWarned = false
    var failures = 0
    var retryAt: Instant?
    var dueStep: MaintenancePolicy.Task?

    static let statsInterval: Duration = .seconds(5)

    /// What maintenance is told at open: `[maintenance]`, and how long finished jobs stay.
    struct Settings {
        var maintenance: MaintenanceConfig
        /// `[jobs] keep_finished_secs`: finished jobs older than this go at retention.
        var keepFinishedJobs: Duration

        init(config: StrataConfig) {
            maintenance = config.maintenance
            keepFinishedJobs = config.jobs.keepFinished
        }
    }

    let settings: Settings

    init(_ context: WriterContext, _ settings: Settings) {
        self.context = context
        self.settings = settings
        openedAt = context.clock.now()
    }

    /// The task of the step to run now, if any (starting a round if one is due).
    func nextStep() -> MaintenancePolicy.Task? {
        let clock = context.clock
        let conditions = context.conditions.current
        if round == nil {
            var tasks = MaintenancePolicy.Task.allCases
            if let requested = forced.pending {
                forcedTicket = requested
            } else {
                if statsReadAt.map({ clock.now() >= $0 + Self.statsInterval }) ?? true { readFileStats() }
                tasks = MaintenancePolicy(config: settings.maintenance).due(MaintenancePolicy.Input(
                    now: clock.now(), lastRound: lastRound, onMains: conditions?.onMains ?? false,
                    idle: conditions?.idle ?? false, fileBytes: fileBytes, freeBytes: freeBytes,
                    incrementalVacuum: stats.autoVacuum == 2, sizeWarned: sizeWarned),
                    openedAt: openedAt)
                guard !tasks.isEmpty else { return nil }
                if fileBytes > settings.maintenance.sizeWarningBytes && !sizeWarned {
                    context.logger.warning("""
                        maintenance: the file is \(fileBytes / 1024 / 1024) MB, past size_warning_mb \
                        (\(settings.maintenance.sizeWarningBytes / 1024 / 1024) MB): cleaning up now
                        """)
                }
            }
            round = tasks
            readFileStats()   // the round's vacuum starts from the file as it is now
        }
        return round?.first
    }

    /// Runs one step of `task`; the task stays first in the round until it has nothing left to do.
    func run(_ task: MaintenancePolicy.Task) {
        let (store, metrics, logger) = (context.store, context.metrics, context.logger)
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        var done = true
        var deleted = 0, vacuumed = 0
        do {
            switch task {
            case .retention:
                let retained = try store.withConnection { db in
                    try MaintenanceSteps.retention(db, config: settings.maintenance, keepFinishedJobs: settings.keepFinishedJobs,
                                                   now: context.settings.wallClock(), limit: settings.maintenance.retentionStepRows)
                }
                if retained.rejectedWrites > 0 {
                    logger.notice("maintenance: \(retained.rejectedWrites) parked rejected writes older than keep_rejected_writes_secs deleted")
                }
                deleted = retained.total
                done = deleted < settings.maintenance.retentionStepRows
            case .vacuum:
                vacuumed = try vacuumStep()
                done = vacuumed == 0 || stats.freePages == 0
            case .optimize:
                try store.withConnection { db in try MaintenanceSteps.optimize(db, analysisLimit: settings.maintenance.analysisLimit) }
            }
        } catch {
            guard let storeError = stepFailed(error) else { return }
            logger.warning("maintenance: \(task.rawValue) step failed (attempt \(failures)), will retry: \(storeError)")
            metrics.update { $0.failedMaintenanceSteps += 1 }
            if failures >= context.settings.shutdownAttempts { finishMaintenanceRound() }
            return
        }
        failures = 0
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
            round?.removeFirst()
            if round?.isEmpty == true { finishMaintenanceRound() }
        }
    }

    private func finishMaintenanceRound() {
        readFileStats()
        sizeWarned = fileBytes > settings.maintenance.sizeWarningBytes
        round = nil
        lastRound = context.clock.now()
        failures = 0
        context.metrics.update { $0.maintenanceRounds += 1 }
        if let ticket = forcedTicket {
            forcedTicket = nil
            forced.serve(upTo: ticket, failed: false)
        }
    }

    private var fileBytes: Int { stats.pages * context.settings.pageSize }
    private var freeBytes: Int { stats.freePages * context.settings.pageSize }

    /// The file's size, free pages and auto_vacuum mode, into the state and the metrics.
    func readFileStats() {
        guard let stats = try? context.store.withConnection({ try MaintenanceSteps.fileStats($0) }) else { return }
        self.stats = stats
        statsReadAt = context.clock.now()
        let (file, free, warning) = (fileBytes, freeBytes, fileBytes > settings.maintenance.sizeWarningBytes)
        context.metrics.update {
            $0.fileBytes = file
            $0.freeBytes = free
            $0.fileSizeWarning = warning
        }
    }

    /// One `PRAGMA incremental_vacuum` step; the pages it returned (0: nothing to do, or
    /// the file is not in incremental mode). The stats are those the last step left.
    private func vacuumStep() throws -> Int {
        guard stats.autoVacuum == 2, stats.freePages > 0 else { return 0 }
        let before = stats.freePages
        try context.store.withConnection { db in try MaintenanceSteps.incrementalVacuum(db, pages: settings.maintenance.vacuumStepPages) }
        readFileStats()
        return max(0, before - stats.freePages)
    }

    /// At a clean shutdown (SQLite's advice: optimize before closing); a failure is only logged.
    func optimizeAtShutdown() {
        do {
            try context.store.withConnection { db in try MaintenanceSteps.optimize(db, analysisLimit: settings.maintenance.analysisLimit) }
        } catch {
            context.logger.notice("maintenance: PRAGMA optimize at shutdown failed: \(error)")
        }
    }
}

/// When the writer runs a maintenance round, and which of its tasks: pure, so that its
/// table is tested in virtual time (`MaintenancePolicyTests`).
///
/// A round is retention (rows past their configured age), then free pages returned to the
/// filesystem (`PRAGMA incremental_vacuum`, a few hundred pages a step), then `PRAGMA
/// optimize` (statistics, bounded by `analysis_limit`). It runs:
///
/// | when | tasks |
/// |---|---|
/// | idle on mains or charging, `interval_secs` after the last round | all three |
/// | the file passed `size_warning_mb` (once per crossing), any power | retention, vacuum |
/// | free pages passed `vacuum_max_free_mb`, any power | vacuum |
///
/// On battery nothing runs below the hard limits: statistics can wait for the charger.
struct MaintenancePolicy: Sendable {
    enum Task: String, Sendable, CaseIterable {
        case retention, vacuum, optimize
    }

    struct Input: Sendable {
        var now: Instant
        /// When the last round finished (nil: none this session).
        var lastRound: Instant?
        var onMains: Bool
        var idle: Bool
        /// The file (pages × page size) and its free pages, in bytes.
        var fileBytes: Int
        var freeBytes: Int
        /// `auto_vacuum = INCREMENTAL`: free pages can be returned step by step (a file
        /// without it needs a full VACUUM, `strata maintain --vacuum`, never run on its own).
        var incrementalVacuum: Bool
        /// The file was past `size_warning_mb` at the last round (its crossing was handled).
        var sizeWarned: Bool
    }

    let config: MaintenanceConfig

    /// The first round of a session waits this long after the open (the open itself, the
    /// reload, the first flushes come first).
    var firstRoundAfterOpen: Duration { min(config.interval, .seconds(60)) }

    /// The tasks of the round to start now, in order; empty: none.
    func due(_ input: Input, openedAt: Instant) -> [Task] {
        if input.fileBytes > config.sizeWarningBytes && !input.sizeWarned { return [.retention, .vacuum] }
        if input.incrementalVacuum && input.freeBytes > config.vacuumMaxFreeBytes { return [.vacuum] }
        guard input.onMains, input.idle else { return [] }
        let since = input.lastRound ?? (openedAt + firstRoundAfterOpen - config.interval)
        guard input.now >= since + config.interval else { return [] }
        var tasks: [Task] = [.retention]
        if input.incrementalVacuum && input.freeBytes > config.vacuumMinFreeBytes { tasks.append(.vacuum) }
        tasks.append(.optimize)
        return tasks
    }
}

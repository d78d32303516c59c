/// `[backup]`: scheduled backups (`Sources/Strata/Backup`), made on the writer thread in
/// bounded steps: by power, as maintenance is (often on mains, rarely or never on
/// battery), keeping the newest `keep`.
public struct BackupConfig: Sendable, Equatable {
    /// `keep`: the newest backups kept; older ones are deleted after a new one is verified.
    /// 0: no scheduled backups (``Engine/backup(to:timeout:)`` and `strata backup` still work).
    public var keep = 0
    /// `folder`: where scheduled backups go; empty: `PATH.backups/` beside the document.
    /// Each is `NAME-YYYYMMDD-HHMMSS-mmm.EXT`, with its assets and parked rows beside it.
    public var folder = ""
    /// `interval_secs`: a scheduled backup at most this often on mains power (at least 1).
    public var interval: Duration = .seconds(600)
    /// `battery_interval_secs`: at most this often on battery or power-saver; 0: never.
    public var batteryInterval: Duration = .seconds(3600)
    /// `step_budget_ms`: the time one step of the copy should take at most (its pages
    /// adapt to it): a batch that arrives waits for one step at most.
    public var stepBudget: Duration = .milliseconds(10)

    public init() {}
}

extension StrataConfig {
    /// `[backup] interval_secs` at its lowest.
    static let shortestBackupInterval: Duration = .seconds(1)

    static func readBackup(_ r: inout ConfigReader) throws -> BackupConfig {
        var c = BackupConfig()
        c.keep = try r.int("keep", default: c.keep, range: 0 ... 1_000, unit: " backups")
        c.folder = try r.string("folder", default: c.folder)
        c.interval = try r.duration("interval_secs", default: c.interval, unit: .seconds, max: .seconds(365 * 86_400))
        c.batteryInterval = try r.duration("battery_interval_secs", default: c.batteryInterval, unit: .seconds, allowZero: true,
                                           max: .seconds(365 * 86_400))
        c.stepBudget = try r.duration("step_budget_ms", default: c.stepBudget, unit: .milliseconds, max: .seconds(10))
        // Each backup copies the whole document: more often than a second is a copy loop
        // (0.001 s with keep = 10000 wrote 3 GB a minute), not a schedule.
        if c.interval < Self.shortestBackupInterval {
            throw r.error(.invalidValue, "interval_secs", "must be at least \(Int(Self.shortestBackupInterval.seconds)) second (each backup copies the whole document), got \(c.interval.seconds)")
        }
        if c.batteryInterval > .zero && c.batteryInterval < c.interval {
            throw r.error(.invalidValue, "battery_interval_secs", "must be 0 (never on battery) or at least interval_secs (\(Int(c.interval.seconds)))")
        }
        try r.rejectUnknownKeys(known: ["keep", "folder", "interval_secs", "battery_interval_secs", "step_budget_ms"])
        return c
    }

    var renderedBackup: String {
        """
        [backup]
        keep = \(backup.keep)
        folder = "\(backup.folder)"
        interval_secs = \(Int(backup.interval.seconds))
        battery_interval_secs = \(Int(backup.batteryInterval.seconds))
        step_budget_ms = \(Int(backup.stepBudget.milliseconds))

        """
    }
}

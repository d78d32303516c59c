import Foundation

extension Writer {
    /// What the writer is told at open: the `[writer]`, `[persistence]`, `[compaction]`,
    /// `[maintenance]` and `[jobs]` settings it acts on. Immutable once the writer starts.
    struct Settings: Sendable {
        /// Between a failed commit and the next attempt (`[writer]`).
        var backoff: Backoff
        var checkpointInterval: Duration
        var maxWalBytes: Int
        var pageSize: Int
        /// Failed attempts allowed while draining for shutdown before giving up.
        var shutdownAttempts = 5
        /// While batches keep coming, how often the writer looks for the next one
        /// (zero: never poll, always be woken). See ``WriteBuffer``.
        var pollInterval: Duration = .zero
        /// How long after the last batch the writer keeps polling before it parks.
        var pollLinger: Duration = .zero
        /// The host's tick interval: polls fall half a tick away from the ticks.
        var tickInterval: Duration = .zero
        /// When to compact the segment log, and how.
        var compaction = CompactionPolicy(config: CompactionConfig())
        /// The time one compaction step should take at most (its byte budget adapts to it).
        var compactionStepBudget: Duration = .milliseconds(25)
        /// When logged operations may be dropped (``OperationRowsPart``).
        var operationLog = OperationLogConfig()
        /// Below this much free space, derived batches wait (`DiskGuard.swift`); 0: off.
        var minFreeDiskBytes = 0
        /// Freed when a shutdown meets a full disk (``DiskReserve``); 0: none.
        var diskReserveBytes = 0
        /// Reads the free space for the document at a path (tests replace `statvfs`).
        var freeDiskSpace: @Sendable (String) -> Int? = DiskGuard.freeDiskSpace
        /// Checkpoint (TRUNCATE) as soon as the thread starts: after a crash, the WAL the
        /// dead session left would otherwise only grow if sessions keep crashing before
        /// their first checkpoint.
        var checkpointAtStart = false
        /// See `IntegrityCheckTask.swift`.
        var idleIntegrityCheck = false
        /// Retention, space and statistics (`MaintenanceTask.swift`).
        var maintenance = MaintenanceConfig()
        /// Scheduled backups and the copy's step budget (`BackupTask.swift`).
        var backup = BackupConfig()
        /// The window compaction leaves alone, and what despawns keep (`Sources/Strata/History`).
        var history = HistoryConfig()
        /// `[jobs] keep_finished_secs`: finished jobs older than this go at retention.
        var keepFinishedJobs: Duration = .zero
        /// Unix milliseconds, for the ages retention compares (the rows' own timestamps).
        var wallClock: @Sendable () -> Int64 = { unixMilliseconds() }
    }
}

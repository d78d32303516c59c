import Foundation

extension Writer {
    /// What the writer itself is told at open, from `[writer]`, `[persistence]`,
    /// `[operation_log]` and `[history]`: how it commits, checkpoints, polls and retries.
    /// Each task (and the disk guard) builds its own settings from the config beside it
    /// (``CompactionTask/Settings``, ``MaintenanceTask/Settings``, …). Immutable once the
    /// writer starts; shared with the tasks through ``WriterContext/settings`` for what
    /// every one of them reads (the page size, the wall clock, the shutdown's attempts).
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
        /// When logged operations may be dropped (``OperationRowsPart``).
        var operationLog = OperationLogConfig()
        /// Whether despawns keep their rows for the window (the batch parts).
        var history = HistoryConfig()
        /// Checkpoint (TRUNCATE) as soon as the thread starts: after a crash, the WAL the
        /// dead session left would otherwise only grow if sessions keep crashing before
        /// their first checkpoint.
        var checkpointAtStart = false
        /// Unix milliseconds, for the ages retention compares (the rows' own timestamps).
        var wallClock: @Sendable () -> Int64 = { unixMilliseconds() }

        init(config: StrataConfig, options: Engine.Options, pageSize: Int, checkpointAtStart: Bool) {
            backoff = config.writer.backoff
            checkpointInterval = config.persistence.checkpointInterval
            maxWalBytes = FlushPolicy(config: config.persistence).maxWalBytes(power: .assumedAC)
            self.pageSize = pageSize
            pollInterval = options.writerPollInterval
            pollLinger = options.writerPollLinger
            tickInterval = .nanoseconds(1_000_000_000 / Int64(config.simulation.tickHz))
            operationLog = config.operationLog
            history = config.history
            self.checkpointAtStart = checkpointAtStart
            wallClock = options.wallClock
        }
    }
}

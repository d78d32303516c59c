/// The engine's configuration, as loaded and validated from `config.toml`.
///
/// Every field has the specification's value as its default, so `StrataConfig()` is the
/// documented default configuration. Load a file with ``StrataConfig/load(path:)``
/// or ``StrataConfig/parse(_:source:)``; both validate and fail with a ``ConfigError``
/// that names the key.
public struct StrataConfig: Sendable, Equatable {
    public var database = DatabaseConfig()
    public var simulation = SimulationConfig()
    public var persistence = PersistenceConfig()
    public var writer = WriterConfig()
    public var compaction = CompactionConfig()
    public var operationLog = OperationLogConfig()
    public var maintenance = MaintenanceConfig()
    public var backup = BackupConfig()
    public var history = HistoryConfig()
    public var jobs = JobsConfig()
    public var sync = SyncConfig()
    public var assets = AssetsConfig()
    public var metrics = MetricsConfig()

    public init() {}
}

/// `[compaction]`: when the segment log is folded back (docs/storage.md). Sizes are the
/// bytes of records in the log; the policy is `CompactionPolicy`.
public struct CompactionConfig: Sendable, Equatable {
    /// `idle_backlog_mb`: on mains power or charging, with the user idle, fold the whole
    /// log into the base rows once it holds this much.
    public var idleBacklogBytes = 1024 * 1024
    /// `backlog_mb`: on mains power or charging, compact once the log holds this much.
    public var backlogBytes = 16 * 1024 * 1024
    /// `max_backlog_mb`: the hard cap. On battery (or power-saver), compaction waits for
    /// this; it bounds the reload time and the file whatever the power.
    public var maxBacklogBytes = 64 * 1024 * 1024
    /// `step_budget_ms`: the time one compaction step (one transaction) should take at most.
    public var stepBudget: Duration = .milliseconds(25)

    public init() {}
}

/// `[operation_log]`: how long logged operations are kept.
public struct OperationLogConfig: Sendable, Equatable {
    public enum Retention: String, Sendable, Equatable, CaseIterable {
        /// Drop an operation once every known peer has acknowledged it (and it is old enough).
        case acknowledged
        /// Keep every operation.
        case keep
    }

    /// `retention`: `acknowledged` or `keep`.
    public var retention = Retention.acknowledged
    /// `retention_min_age_secs`: an acknowledged operation stays at least this long.
    public var retentionMinAge: Duration = .seconds(3600)

    public init() {}
}

/// `[maintenance]`: retention, space and statistics, on the writer thread between
/// batches (`MaintenanceTask.swift`): when the user is idle on mains power or
/// charging, and on battery only past the hard limits.
public struct MaintenanceConfig: Sendable, Equatable {
    /// `interval_secs`: a maintenance round (retention, free pages returned, `PRAGMA
    /// optimize`) runs at most this often, when idle on mains.
    public var interval: Duration = .seconds(3600)
    /// `size_warning_mb`: a file larger than this is reported (a warning, the metrics) and
    /// cleaned up at once, whatever the power (50 MB by default).
    public var sizeWarningBytes = 50 * 1024 * 1024
    /// `vacuum_min_free_mb`: free pages worth returning to the filesystem when idle on mains.
    public var vacuumMinFreeBytes = 1024 * 1024
    /// `vacuum_max_free_mb`: the hard limit: past this many free bytes, they are returned
    /// on battery too.
    public var vacuumMaxFreeBytes = 32 * 1024 * 1024
    /// `vacuum_step_pages`: pages one `PRAGMA incremental_vacuum` step returns.
    public var vacuumStepPages = 256
    /// `retention_step_rows`: rows one retention step deletes at most (one transaction).
    public var retentionStepRows = 1000
    /// `analysis_limit`: rows `PRAGMA optimize`'s ANALYZE looks at per index (SQLite 3.40
    /// does not bound its own work before 3.46).
    public var analysisLimit = 400
    /// `rewrite_old_payloads`: rewrite rows written with an older payload version while
    /// the user is idle on mains power (false: each at its next change).
    public var rewriteOldPayloads = false
    /// `rewrite_step_rows`: keys of older payloads marked for rewriting at a time (the next step follows their flush).
    public var rewriteStepRows = 1000
    /// `keep_dead_jobs_secs`: dead jobs are deleted this long after they died; 0: kept until retried.
    public var keepDeadJobs: Duration = .zero
    /// `keep_rejected_writes_secs`: parked rejected writes are deleted this long after they
    /// were parked; 0: kept until replayed.
    public var keepRejectedWrites: Duration = .zero
    /// `start_check_secs`: a start after a clean shutdown runs `PRAGMA quick_check` on the
    /// tables it does not read (jobs, assets, sync state, parked rows, their indexes) when
    /// the file's last check (this one, the one after a crash, or the idle full check) is
    /// older than this, so that damage there is found before it is needed; 0: never.
    public var startCheckAge: Duration = .seconds(86_400)

    public init() {}
}

/// `[metrics]`: what the engine measures about itself.
public struct MetricsConfig: Sendable, Equatable {
    /// `count_fsyncs`: open the database through a counting VFS and report its sync
    /// requests and bytes written (``PersistenceMetrics/vfs``). The cost is an atomic
    /// increment per write and per sync.
    public var countFsyncs = true
    /// `export_interval_ms`: how often the counters and gauges are reported through
    /// swift-metrics (to the backend the host bootstrapped; durations are reported as they
    /// happen). 0: not at all.
    public var exportInterval: Duration = .seconds(2)

    public init() {}
}

/// `[database]`: where and how the SQLite file is stored.
public struct DatabaseConfig: Sendable, Equatable {
    /// `path`: the database file (one per document). Relative paths are relative to
    /// the working directory.
    public var path = "strata.db"
    /// `page_size`: applied before the first table; a power of two, 512…65536. 512: a
    /// commit rewrites the last page of each B-tree it appends to, so the page is the unit
    /// every commit pays (docs/storage.md, "Settings that matter here").
    public var pageSize = 512
    /// `auto_vacuum`: applied when the file is created, like the page size.
    public var autoVacuum = AutoVacuum.incremental

    public init() {}
}

/// SQLite's `auto_vacuum` mode for a new file (<https://sqlite.org/pragma.html#pragma_auto_vacuum>).
public enum AutoVacuum: String, Sendable, Equatable, CaseIterable {
    /// Free pages go back to the filesystem in maintenance steps (`incremental_vacuum`).
    /// The price: SQLite keeps pointer-map pages, and every commit that allocates or frees a
    /// page also writes one (about +8 % of the bytes written at N = M = 1k).
    case incremental
    /// No pointer-map pages; free pages are reused by later writes but the file does not
    /// shrink until `strata maintain PATH --vacuum` (which converts it to incremental).
    case none

    /// The `PRAGMA auto_vacuum` argument.
    var pragma: String { rawValue.uppercased() }
}

/// `[simulation]`: the host's fixed-tick loop.
public struct SimulationConfig: Sendable, Equatable {
    /// `tick_hz`: the host's fixed ticks per second. The engine hands a tier to the writer
    /// one tick (plus the commit budget) ahead of its deadline, so a host sets its loop's rate.
    public var tickHz = 60
    /// `max_catch_up_ticks`: ticks run at most per frame after a stall ("spiral of death" guard).
    public var maxCatchUpTicks = 5

    public init() {}
}

/// Whether critical commits survive power loss or only a process crash.
public enum CriticalDurability: String, Sendable, Equatable, CaseIterable {
    /// Critical batches commit with `synchronous=FULL`: one WAL fsync per critical flush.
    case powerLoss = "power_loss"
    /// Critical batches commit with `synchronous=NORMAL`: no fsync at commit; a power
    /// loss may lose critical changes back to the last checkpoint.
    case crash
}

/// `[writer]`: the writer thread's handling of busy and failing writes.
public struct WriterConfig: Sendable, Equatable {
    /// `busy_timeout_ms`: how long SQLite waits on a lock before SQLITE_BUSY.
    public var busyTimeout: Duration = .milliseconds(100)
    /// `retry_initial_backoff_ms`: first wait after a failed commit; doubles each time.
    public var retryInitialBackoff: Duration = .milliseconds(50)
    /// `retry_max_backoff_ms`: the longest wait between retries.
    public var retryMaxBackoff: Duration = .milliseconds(5000)
    /// `min_free_disk_mb`: below this much free space on the document's filesystem the
    /// writer holds derived batches in memory and commits critical ones only (0: off).
    public var minFreeDiskBytes = 10 * 1024 * 1024
    /// `disk_reserve_kb`: space kept beside the document (`PATH.reserve`) and freed when a
    /// shutdown meets a full disk, so its last batch commits or is parked, not lost (0: off).
    public var diskReserveBytes = 1024 * 1024

    public init() {}
}

/// `[jobs]`: the document's job queue and its worker pool (`Sources/Strata/Jobs`).
public struct JobsConfig: Sendable, Equatable {
    /// `workers`: threads that run job handlers (``Engine/startWorkers(_:)``).
    public var workers = 2
    /// `max_attempts`: runs a job gets before it is dead (kept for inspection, never run again
    /// unless retried by hand). A run cut short by a crash counts.
    public var maxAttempts = 5
    /// `retry_initial_backoff_ms`: the wait before a failed job's second run; doubles each time.
    public var retryInitialBackoff: Duration = .seconds(1)
    /// `retry_max_backoff_secs`: the longest wait between runs.
    public var retryMaxBackoff: Duration = .seconds(300)
    /// `keep_finished_secs`: how long a finished job's row stays (status `done`); 0: it is
    /// deleted when it completes.
    public var keepFinished: Duration = .zero
    /// `shutdown_timeout_secs`: how long a shutdown waits for running jobs; the ones still
    /// running then are left pending for the next session.
    public var shutdownTimeout: Duration = .seconds(10)

    public init() {}
}

/// `[sync]`: the outbox pushed to a server and the operations pulled from it
/// (`Sources/Strata/Sync`). Off unless `server` is set (or ``Engine/startSync(transport:network:applying:)``
/// is called with a transport).
public struct SyncConfig: Sendable, Equatable {
    /// `server`: where to sync: a sync service (`https://sync.example.com`, or `http://` on
    /// loopback) or a PostgreSQL server directly (`postgresql://user@/strata?host=/run/postgresql`,
    /// for trusted networks); empty: no sync.
    public var server = ""
    /// `token_file`: with a sync service, the file holding the bearer token (read again
    /// when the service refuses the one it had, so a refreshed file is picked up).
    public var tokenFile = ""
    /// `document`: the shared document's name on the server (devices that share it sync).
    public var document = "default"
    /// `batch_size`: operations per push, sent in one round trip.
    public var batchSize = 50
    /// `pull_batch_size`: operations per pulled page.
    public var pullBatchSize = 500
    /// `join_batch_size`: the largest push and pulled page. While pushes and pages come
    /// back full (a backlog; a device joining a large document, or back from a long time
    /// offline) each is twice the last, up to this.
    public var joinBatchSize = 10_000
    /// `max_attempts`: pushes the server refuses an operation before it is a dead letter
    /// (kept, shown by `strata sync status`, pushed again by `strata sync retry`). Failures
    /// to reach the server do not count: being offline is not the operation's fault.
    public var maxAttempts = 5
    /// `retry_initial_backoff_ms`: the wait after a failed push or pull; doubles each time.
    public var retryInitialBackoff: Duration = .milliseconds(250)
    /// `retry_max_backoff_secs`: the longest wait.
    public var retryMaxBackoff: Duration = .seconds(30)
    /// `pull_interval_ms`: how often the server is asked for other devices' operations
    /// when it cannot tell (`listen` off, or its notifications not reaching this device).
    public var pullInterval: Duration = .milliseconds(500)
    /// `listen`: the server tells this device when another one pushed (PostgreSQL's
    /// `LISTEN`/`NOTIFY`, on a connection of its own), and it pulls at once.
    public var listen = true
    /// `safety_pull_secs`: while listening, the server is still asked this often (a lost
    /// notification costs at most this long); an idle device makes no other query.
    public var safetyPull: Duration = .seconds(30)
    /// `push_interval_ms`: how often the outbox is looked at for new operations (a
    /// committed operation waits at most this long; coming online pushes at once).
    public var pushInterval: Duration = .milliseconds(100)
    /// `network_source`: `networkmanager` (connectivity from NetworkManager over D-Bus,
    /// falling back to trying the server when it is absent) or `none` (try the server).
    public var networkSource = NetworkSource.networkmanager
    /// `request_timeout_ms`: the longest a connection or a round trip may take.
    public var requestTimeout: Duration = .seconds(5)
    /// `replicate_interval_ms`: a replicated component's changes are logged as operations
    /// at most this long after they happen, whatever the type's tier (nil: the critical
    /// flush delay, so they ride the critical flush and cost no sync of their own).
    public var replicateInterval: Duration?
    /// `max_clock_ahead_secs`: a replicated change stamped further than this ahead of this
    /// device's clock is kept, reported and applied only once the clock reaches it (so
    /// one device's wrong clock cannot push every later edit into the future).
    public var maxClockAhead: Duration = .seconds(300)

    public enum NetworkSource: String, Sendable, CaseIterable {
        case networkmanager
        case none
    }

    public init() {}
}

/// `[assets]`: the files beside the document and their reconciliation (`Sources/Strata/Assets`).
public struct AssetsConfig: Sendable, Equatable {
    /// What the reconciliation does with a file in the assets folder that has no row.
    public enum UnknownFiles: String, Sendable, CaseIterable {
        /// Registered, without an owner.
        case adopt
        /// Moved to `PATH.assets/quarantine/`.
        case quarantine
    }

    /// `unknown_files`.
    public var unknownFiles = UnknownFiles.quarantine
    /// `min_file_bytes`: files smaller than this are removed by the reconciliation (a
    /// recording shorter than a second); 0: none.
    public var minFileBytes = 0

    public init() {}
}

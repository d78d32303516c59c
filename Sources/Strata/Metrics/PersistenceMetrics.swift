/// The specification's metrics, plus the counters the engine needs to prove its
/// contract (commits, FULL commits, failures, merges).
///
/// A snapshot: read it from any thread through ``Engine/metrics``.
public struct PersistenceMetrics: Sendable, Equatable {
    // Write volume
    /// Component values written (the specification's `total_writes`): put records appended to the segment log.
    public var componentRowsWritten = 0
    /// Components removed: tombstone records appended.
    public var componentRowsDeleted = 0
    public var entityRowsInserted = 0
    public var entityRowsDeleted = 0
    /// Settings set or removed (rows written or deleted in `settings`).
    public var settingRowsWritten = 0
    /// Operations logged (rows inserted in `operation_log`) and vector-clock rows written.
    public var operationsLogged = 0
    public var vectorClockRowsWritten = 0
    /// Operations dropped by retention (every known peer had acknowledged them).
    public var operationsDropped = 0
    /// Encoded payload bytes written (the specification's `bytes_written`; SQLite's own bytes are counted by the VFS).
    public var payloadBytesWritten = 0
    /// Of `payloadBytesWritten`, the replicated entities' stamps (the engine's own component,
    /// `strata.replica`), so that a report can say what the host's own values cost.
    package var stampPayloadBytesWritten = 0
    /// Payload bytes of the operations logged (what the host encoded in each).
    public var operationPayloadBytes = 0
    /// Of `operationPayloadBytes`: this replica's operations the engine derived from the
    /// host's synced components (each carries the value the host set), and the operations
    /// received from other replicas (their data, not this host's).
    package var derivedOperationPayloadBytes = 0
    package var receivedOperationPayloadBytes = 0
    /// Batches committed through a rollback journal for their size (`Writer+Bulk.swift`).
    public var bulkCommits = 0
    /// Segment rows appended by commits, and the bytes of records in them.
    public var segmentsWritten = 0
    public var segmentBytesWritten = 0

    // The segment log now (docs/storage.md)
    /// Rows in the log, the bytes and records in them.
    public var segmentBacklogRows = 0
    public var segmentBacklogBytes = 0
    public var segmentBacklogRecords = 0
    /// Bytes of the log's live records (the newest of each key); the rest is garbage.
    public var segmentLiveBytes = 0
    /// Rows that cannot be read (skipped by the reload; compaction sets them aside).
    public var unreadableSegments = 0
    /// Unreadable segment rows compaction moved to `segments_set_aside` (with their reason)
    /// and went on around, this session.
    public var segmentsSetAside = 0

    // Compaction
    /// Rounds finished, by method (`merge`, `fold`), and steps run (one transaction each).
    public var compactionRounds = 0
    public var compactionsByMethod: [String: Int] = [:]
    public var compactionSteps = 0
    /// Steps that failed and were retried later.
    public var failedCompactionSteps = 0
    /// Bytes of records consumed, and written back as merged segments.
    public var compactionBytesRead = 0
    public var compactionBytesWritten = 0
    /// Keys written into base rows by folds.
    public var compactionKeysFolded = 0
    public var totalCompactionDuration: Duration = .zero
    /// The longest step: what a batch that arrives during one may wait.
    public var maxCompactionStepDuration: Duration = .zero

    // Maintenance (`MaintenanceTask.swift`)
    /// Rounds finished and steps run (one transaction or pragma each), failed steps.
    public var maintenanceRounds = 0
    public var maintenanceSteps = 0
    public var failedMaintenanceSteps = 0
    /// Rows deleted by retention (dead and finished jobs, parked rejected writes past their age).
    public var retentionRowsDeleted = 0
    /// Free pages returned to the filesystem (`incremental_vacuum`), and `PRAGMA optimize` runs.
    public var pagesVacuumed = 0
    public var optimizeRuns = 0
    public var totalMaintenanceDuration: Duration = .zero
    public var maxMaintenanceStepDuration: Duration = .zero
    /// The file's pages and free pages in bytes at the last look, and whether it is past
    /// `size_warning_mb`.
    public var fileBytes = 0
    public var freeBytes = 0
    public var fileSizeWarning = false

    // Backups (`BackupTask.swift`)
    /// Backups verified and named, and those that failed; the longest step of a copy.
    public var backupsCompleted = 0
    public var backupsFailed = 0
    public var maxBackupStepDuration: Duration = .zero

    // Flushes and commits
    /// Batches handed to the writer (the specification's `flush_count`).
    public var flushCount = 0
    public var flushesByReason: [FlushReason: Int] = [:]
    /// Transactions committed by the writer (one per batch; merged batches commit once).
    public var commitCount = 0
    /// Of which with `synchronous=FULL`.
    public var fullCommitCount = 0
    public var totalCommitDuration: Duration = .zero
    public var maxCommitDuration: Duration = .zero
    /// The longest commit of a batch of routine size (at most ``routineCommitRows`` rows):
    /// what the slow-flush alert reads. A large world's first save takes longer for its
    /// size, not because the disk is slow.
    public var maxRoutineCommitDuration: Duration = .zero
    public static let routineCommitRows = 4096
    /// Batches that waited for the writer and were merged.
    public var mergedBatches = 0
    /// Flushes that had to wake a parked writer, a system call on the tick thread; the
    /// others were found by the writer's poll (`Engine.Options.writerPollInterval`).
    public var writerWakes = 0

    // Failures
    /// Commits that failed and were retried.
    public var failedCommits = 0
    /// Requests other threads handed the writer (the job queue's), run in group commits.
    public var writerRequests = 0
    /// Rows a commit rejected for a reason retrying cannot fix, isolated from their batch
    /// and parked (``RejectedWrite``); their batch's other rows committed.
    public var rejectedRows = 0
    /// Of which parked in the side file `PATH.rejected` (the database refused them too).
    public var rejectedRowsInSideFile = 0
    /// Rows neither committed nor parked (the side file could not be written either).
    public var lostRows = 0
    /// Jobs ``JobQueue/enqueueSoon(_:for:payload:priority:)`` did not queue because their
    /// entity was despawned before the job was saved (it would have gone with the entity).
    public var jobsNotQueued = 0
    /// Jobs it could not queue for another reason (each one logged): lost.
    public var jobsLost = 0
    /// Rows that committed after their batch failed at least once (a full disk that freed
    /// again, an I/O error that passed): held in memory meanwhile, late but not lost.
    public var rowsCommittedLate = 0
    /// Rows held in memory now because their last commit attempt failed (0 once they commit).
    public var rowsHeld = 0
    /// Times a shutdown on a full disk freed the disk reserve (`[writer] disk_reserve_kb`).
    public var diskReserveReleases = 0
    /// Replicated components: what this device did with other devices' values, the
    /// overwrites between devices, what it holds back (``Engine/replicationStatus``, as of
    /// the last flush or pull).
    public var replication = ReplicationStatus()
    /// Free space on the document's filesystem at the last commit (bytes), and whether it
    /// was below `min_free_disk_mb` (derived batches are then held in memory).
    public var freeDiskBytes: Int?
    public var lowDiskSpace = false
    /// Times the writer held a derived batch back for lack of space.
    public var batchesHeldForDiskSpace = 0
    public var lastWriteError: String?
    /// Rows committed through batches, per kind of data (`world`, `settings`, `operations`,
    /// `rejectedWrites`: the kinds a batch carries).
    public var rowsCommittedByKind: [String: Int] = [:]

    // Checkpoints and WAL health
    public var checkpointCount = 0
    public var checkpointsByMode: [String: Int] = [:]
    /// Checkpoints that could not copy every frame (readers in the way).
    public var incompleteCheckpoints = 0
    public var totalCheckpointDuration: Duration = .zero
    public var walSizeBytes = 0
    public var maxWalSizeBytes = 0
    /// The largest WAL seen past the limit in force then (`max_wal_size_mb`, or the
    /// desktop's), and that limit; 0 while the WAL stayed inside it.
    public var walPastLimitBytes = 0
    public var walLimitBytes = 0

    // Recovery
    /// The idle integrity check of this session: "ok", or the problems it found (the next
    /// open then sets the file aside and salvages it); nil until it has run.
    public var integrityCheck: String?
    /// Times this session found its file corrupt while running and replaced it with one
    /// written from memory (`Engine+StoreReplacement.swift`), and what the last one said.
    public var storeReplacements = 0
    public var lastStoreReplacement: String?
    public var crashRecoveryCount = 0
    public var cleanShutdownCount = 0

    // The disk, as SQLite asked of it (with `[metrics] count_fsyncs = true`)
    /// Sync requests, writes and bytes per file kind since the engine opened.
    public var vfs: VFSCounts?
    /// CPU time the writer thread has used (its thread clock).
    public var writerCPUTime: Duration = .zero

    public init() {}

    /// The specification's `avg_flush_duration`: mean commit time of a batch on the writer thread.
    public var averageCommitDuration: Duration {
        commitCount == 0 ? .zero : totalCommitDuration / commitCount
    }

    public var averageCheckpointDuration: Duration {
        checkpointCount == 0 ? .zero : totalCheckpointDuration / checkpointCount
    }

    /// The specification's alerts: slow flushes, a large WAL, frequent crashes.
    public var alerts: [String] {
        var alerts: [String] = []
        if maxRoutineCommitDuration > .milliseconds(50) {
            alerts.append("flush took \(Int(maxRoutineCommitDuration.milliseconds)) ms (> 50 ms): disk slow or overloaded")
        }
        if walPastLimitBytes > 0 {
            alerts.append(String(format: "WAL reached %.1f MB (> max_wal_size_mb %.1f MB): checkpoint more often",
                                 Double(walPastLimitBytes) / 1_048_576, Double(walLimitBytes) / 1_048_576))
        }
        if fileSizeWarning {
            alerts.append("the file is \(fileBytes / 1024 / 1024) MB (past size_warning_mb): see `strata doctor`")
        }
        let sessions = crashRecoveryCount + cleanShutdownCount
        if sessions > 0 && Double(crashRecoveryCount) / Double(sessions) > 0.1 {
            alerts.append("\(crashRecoveryCount) of \(sessions) sessions crashed (> 10 %): flush more aggressively")
        }
        return alerts
    }
}

extension PersistenceMetrics {
    /// Copies the log's gauges (writer thread, under the recorder's lock).
    mutating func recordBacklog(_ log: SegmentLog) {
        segmentBacklogRows = log.segmentCount
        segmentBacklogBytes = log.bytes
        segmentBacklogRecords = log.records
        segmentLiveBytes = log.liveBytes
        unreadableSegments = log.unreadableRows
    }
}

extension PersistenceMetrics {
    /// Counts a backup that finished or failed (any thread, under the recorder's lock).
    mutating func recordBackup(_ result: Result<BackupReport, any Error>) {
        switch result {
        case .success(let report):
            backupsCompleted += 1
            maxBackupStepDuration = max(maxBackupStepDuration, .milliseconds(report.longestStepMilliseconds))
        case .failure:
            backupsFailed += 1
        }
    }
}

/// The lock-protected home of the live ``PersistenceMetrics``.
final class MetricsRecorder: @unchecked Sendable {
    // @unchecked Sendable: `metrics` is only touched under `lock`.
    private let lock = Lock()
    private var metrics = PersistenceMetrics()
    /// The durations reported to swift-metrics as they happen (writer thread).
    let timers: MetricsTimers

    init(timers: MetricsTimers) {
        self.timers = timers
    }

    func update(_ body: (inout PersistenceMetrics) -> Void) { lock.withLock { body(&metrics) } }
    var snapshot: PersistenceMetrics { lock.withLock { metrics } }
}

import Foundation
import GRDB
import GRDBSQLite
import Logging

/// The last stage of the write path: the one thread that writes to SQLite.
///
/// A dedicated `Thread` (not the cooperative pool: SQLite blocks) that owns the
/// store's write connection. It takes batches from the ``WriteBuffer``, commits each
/// in ONE transaction (its ``BatchPart``s write the rows), checkpoints the WAL by
/// hand, compacts the segment log between batches, and on stop writes the
/// clean-shutdown mark and truncates the WAL.
///
/// States:
///
///     created ──start──▶ running ──stop──▶ draining ──slot empty──▶ finished
///
/// While running, the writer *polls* the slot every `pollInterval` for `pollLinger`
/// after its last batch (a flush then costs the tick thread no system call), and
/// otherwise *parks* until a submission wakes it or the checkpoint timer fires.
/// While compaction is due it runs one bounded step at a time and looks at the slot
/// between steps, so a batch never waits behind more than one step
/// (`Writer+Compaction.swift`).
///
/// Invariants:
/// 1. Only this thread touches `store` between `start` and `finished`.
/// 2. A batch whose commit fails is put back (merged with anything newer) and retried
///    with exponential backoff; a transient error never loses it.
/// 3. A batch's sequence is reported committed only after its transaction commits.
/// 4. Batches come first: a compaction step starts only when the slot is empty.
final class Writer: @unchecked Sendable {
    // @unchecked Sendable: the fields below the "writer thread" mark are touched only on
    // the writer thread; `control` fields only under `controlLock`; the rest are immutable.
    let store: Store
    let buffer: WriteBuffer
    let metrics: MetricsRecorder
    let clock: any StrataClock
    let logger: Logger
    let settings: Settings
    let observer: (any PersistenceObserver)?

    struct Settings: Sendable {
        var retryInitialBackoff: Duration
        var retryMaxBackoff: Duration
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
        /// Below this much free space, derived batches wait (`Writer+DiskSpace.swift`); 0: off.
        var minFreeDiskBytes = 0
        /// Freed when a shutdown meets a full disk (``DiskReserve``); 0: none.
        var diskReserveBytes = 0
        /// Reads the free space for the document at a path (tests replace `statvfs`).
        var freeDiskSpace: @Sendable (String) -> Int? = Writer.freeDiskSpace
        /// Checkpoint (TRUNCATE) as soon as the thread starts: after a crash, the WAL the
        /// dead session left would otherwise only grow if sessions keep crashing before
        /// their first checkpoint.
        var checkpointAtStart = false
        /// See `Writer+IntegrityCheck.swift`.
        var idleIntegrityCheck = false
        /// Retention, space and statistics (`Writer+Maintenance.swift`).
        var maintenance = MaintenanceConfig()
        /// `[jobs] keep_finished_secs`: finished jobs older than this go at retention.
        var keepFinishedJobs: Duration = .zero
        /// Unix milliseconds, for the ages retention compares (the rows' own timestamps).
        var wallClock: @Sendable () -> Int64 = { unixMilliseconds() }
    }

    enum State: Equatable {
        case created, running, finished
    }

    let controlLock = Lock()
    var state = State.created
    private var maxWalBytesOverride: Int?
    /// The error that kept the final drain from finishing, if any.
    var shutdownError: StoreError?
    /// Set by ``abandon()``: finish without the clean-shutdown mark.
    var abandoned = false
    /// The power source and the user's activity, as the engine last reported them; nil
    /// until its first end of tick (only `compactNow()` compacts before that).
    var compactionContext: CompactionContext?
    /// `compactNow()` requests made, and served (a fold round finished, or nothing to fold).
    var forcedCompactionsRequested = 0
    var forcedCompactionsServed = 0
    var forcedCompactionFailed = false
    /// `maintainNow()` requests made, and served (a forced round finished).
    var forcedMaintenanceRequested = 0
    var forcedMaintenanceServed = 0

    // Writer thread only.
    let segmentLog: SegmentLog
    /// The batch parts, in the order they write: entity rows, settings, the operation log, replayed rejections, then the segment append.
    let parts: [any BatchPart]
    /// Background work between batches, asked in this order (``WriterTask``). Writer thread.
    lazy var tasks: [any WriterTask] = [
        WriterStepTask(due: { [unowned self] in compactionDue() }, run: { [unowned self] in runCompactionStep($0) },
                       retry: { [unowned self] in compactionRetryAt }),
        WriterStepTask(due: { [unowned self] in maintenanceDue() }, run: { [unowned self] in runMaintenanceStep($0) },
                       retry: { [unowned self] in maintenance.retryAt }),
    ]
    var round: Compactor.Round?
    /// Bytes of records a step consumes, per method (a fold's byte costs more than a
    /// merge's); each adapts to `compactionStepBudget`.
    var compactionStepBytes: [CompactionPolicy.Method: Int] = [.merge: 256 * 1024, .fold: 256 * 1024]
    var compactionFailures = 0
    var compactionRetryAt: Date?
    var lastCheckpoint: Instant
    var incompleteStreak = 0
    /// The checkpoint interval was found not to hold (`Writer+Checkpoint.swift`): said once.
    var intervalWarningGiven = false
    /// A bulk commit could not switch back to WAL mode (`Writer+Bulk.swift`).
    var walModeLost = false
    var consecutiveFailures = 0
    /// The disk reserve was freed this session (`Writer+DiskSpace.swift`).
    var diskReserveReleased = false
    /// Free space was below `min_free_disk_mb` at the last look (`Writer+DiskSpace.swift`).
    var diskSpaceLow = false
    /// This session's idle integrity check has started.
    var integrityCheckStarted = false
    /// Requests waiting for the next batch (`Writer+Requests.swift`).
    var deferredRequests: [WriterRequest] = []
    /// The maintenance round in progress, the last one, the file's size (`Writer+Maintenance.swift`).
    var maintenance: MaintenanceState
    let walFrames = WalFrameCounter()

    init(store: Store, buffer: WriteBuffer, metrics: MetricsRecorder, clock: any StrataClock,
         logger: Logger, settings: Settings, typeIDs: [Int64?], segmentLog: SegmentLog,
         observer: (any PersistenceObserver)? = nil) {
        self.observer = observer
        self.store = store
        self.buffer = buffer
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
        self.settings = settings
        self.segmentLog = segmentLog
        self.parts = [EntityRowsPart(), SettingRowsPart(), OperationRowsPart(retention: settings.operationLog), RejectedRowsPart(),
                      SegmentAppender(log: segmentLog, typeIDs: typeIDs)]
        self.lastCheckpoint = clock.now()
        self.maintenance = MaintenanceState(openedAt: clock.now())
        metrics.update { $0.recordBacklog(segmentLog) }
    }

    func start() {
        controlLock.withLock {
            precondition(state == .created, "writer started twice")
            state = .running
        }
        let thread = Thread { [self] in run() }
        thread.name = "strata.writer"
        thread.start()
    }

    /// Changes the WAL size that forces a checkpoint (the desktop override is larger).
    func setMaxWalBytes(_ bytes: Int) {
        controlLock.withLock { maxWalBytesOverride = bytes }
    }

    var maxWalBytes: Int { controlLock.withLock { maxWalBytesOverride ?? settings.maxWalBytes } }

    /// Closes the buffer and waits until every batch is committed, the clean-shutdown
    /// mark written and the WAL truncated. Returns the error that prevented it, if any.
    func stop() -> StoreError? {
        buffer.close()
        return controlLock.withLock {
            while state != .finished { controlLock.wait() }
            return shutdownError
        }
    }

    /// Waits until the thread has finished, without closing the buffer: after it reported
    /// the file corrupt (``WriteBuffer/reportCorruption(_:)``), when it writes no more.
    func join() {
        controlLock.withLock {
            while state == .running { controlLock.wait() }
        }
    }

    /// SQLITE_CORRUPT or SQLITE_NOTADB: the file is damaged. Reports it (the engine then
    /// replaces the file, `Engine+StoreReplacement.swift`) and returns true; the writer
    /// stops writing to it. Writer thread.
    @discardableResult
    func reportIfCorrupt(_ error: StoreError) -> Bool {
        guard error.isCorruption else { return false }
        if buffer.reportedCorruption == nil {
            logger.error("writer: the database is corrupt (\(error)); nothing more is written to it, the engine replaces it")
        }
        buffer.reportCorruption(error)
        return true
    }

    /// Stops after the queued batches without marking the session clean (the world's
    /// undrained changes are lost, so the next open must see a crash), and waits.
    func abandon() {
        controlLock.withLock { abandoned = true }
        _ = stop()
    }

    private func run() {
        yieldToTheTickThread()
        do {
            try store.withConnection { db in walFrames.install(on: db) }
        } catch {
            logger.error("writer: cannot install the WAL hook: \(error)")
        }
        if settings.checkpointAtStart { checkpoint(.truncate) }
        if !diskReserve.ensure() {
            logger.notice("writer: no room for the disk reserve (\(settings.diskReserveBytes / 1024) KB at \(store.location.reservePath)): made when there is")
        }
        var closingFailures = 0
        var schedule = WriterSchedule(now: Date(), checkpointInterval: settings.checkpointInterval,
                                      pollInterval: settings.pollInterval, pollLinger: settings.pollLinger)
        loop: while true {
            // The file is corrupt: leave it as it is, and the batches to the engine.
            if buffer.reportedCorruption != nil { break loop }
            recordCPUTime()
            startIntegrityCheckIfDue()
            let now = Date()
            let dueTask = tasks.first { $0.stepDue() }
            let stepDue = dueTask != nil
            expireDeferredRequests(now: now)
            let wait = schedule.wait(now: now, stepDue: stepDue, pollDelay: !stepDue && schedule.isPolling(now: now) ? nextPollDelay() : .zero,
                                     retryAt: tasks.compactMap(\.retryAt).min(), requestDeadline: deferredRequests.lazy.map(\.deadline).min())
            switch buffer.take(until: wait.until, parked: wait.parked) {
            case .batch(let batch):
                if holdForDiskSpace(batch) {
                    // Held in the hand-off: look again after a poll's time (a critical batch
                    // that merges into it then goes at once).
                    Thread.sleep(forTimeInterval: 0.1)
                    continue loop
                }
                schedule.tookBatch(at: Date())
                if commitWithRetry(batch) {
                    let deleted = batch.entityDeletes.isEmpty ? nil : batch.entityDeletes
                    if !batch.operations.isEmpty { buffer.notifyCommitted(batch.operations) }
                    checkpointIfNeeded(forced: batch.checkpointAfter)
                    buffer.didCommit(batch)
                    if let deleted { buffer.notifyDeleted(deleted) }
                    serveDeferredRequests()
                    continue loop
                } else {
                    if buffer.reportedCorruption != nil { break loop }
                    if buffer.isClosed {
                        closingFailures += 1
                        if closingFailures >= settings.shutdownAttempts {
                            // One more attempt with the reserve's space, then the side file has room.
                            if releaseDiskReserve() { continue loop }
                            abandonWaiting(reason: "shutdown after \(closingFailures) failed attempts")
                            break loop
                        }
                    }
                    backoff()
                    continue loop
                }
            case .requests(let requests):
                guard !serve(requests) else { continue loop }
                if buffer.isClosed {
                    closingFailures += 1
                    if closingFailures >= settings.shutdownAttempts {
                        let error = StoreError(.write, message: metrics.snapshot.lastWriteError ?? "unknown error", path: store.location.path)
                        for request in buffer.takeRequests() { request.finish(error) }
                        continue loop
                    }
                }
                backoff()
                continue loop
            case .timedOut:
                switch schedule.timedOut(now: Date(), stepDue: stepDue) {
                case .step:
                    dueTask?.runStep()
                    checkpointIfNeeded()
                case .checkpoint:
                    checkpointIfNeeded()
                case .nothing:
                    continue loop
                }
            case .closed:
                break loop
            }
        }
        finish()
    }
}

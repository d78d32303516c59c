import Foundation
import Logging

/// The last stage of the write path: the one thread that writes to SQLite.
///
/// A dedicated `Thread` (not the cooperative pool: SQLite blocks) that owns the
/// store's write connection. It takes batches from the ``WriteBuffer``, commits each
/// in ONE transaction (its ``BatchPart``s write the rows), checkpoints the WAL by
/// hand, compacts the segment log between batches, and on stop writes the
/// clean-shutdown mark and truncates the WAL.
///
/// States (``State``):
///
///     created ──start──▶ running ──loop ends──▶ finished
///
/// `stop()` closes the hand-off: the running loop then drains it (every batch committed
/// or parked) and ends; a file found corrupt ends it at once. When to wait, poll, park,
/// checkpoint, retry or give up is ``WriterSchedule``'s decision, on the writer's one clock;
/// the work between batches is its ``WriterTask``s', asked in order (the idle integrity
/// check, compaction, maintenance, backups), one bounded step at a time, so a batch never
/// waits behind more than one step.
///
/// Invariants:
/// 1. Only this thread touches `store` between `start` and `finished`.
/// 2. A batch whose commit fails is put back (merged with anything newer) and retried
///    with exponential backoff; a transient error never loses it.
/// 3. A batch's sequence is reported committed only after its transaction commits.
/// 4. Batches come first: a compaction step starts only when the slot is empty.
final class Writer: @unchecked Sendable {
    // @unchecked Sendable: the fields below the "writer thread" mark are touched only on
    // the writer thread; `control` fields only under `controlLock`; the rest are immutable
    // or have locks of their own (the tasks' forced rounds, the conditions).
    let context: WriterContext
    var store: Store { context.store }
    var buffer: WriteBuffer { context.buffer }
    var metrics: MetricsRecorder { context.metrics }
    var clock: any StrataClock { context.clock }
    var logger: Logger { context.logger }
    var settings: Settings { context.settings }
    var observer: (any PersistenceObserver)? { context.observer }
    var segmentLog: SegmentLog { context.segmentLog }

    enum State: Equatable { case created, running, finished }

    let controlLock = Lock()
    var state = State.created
    var maxWalBytesOverride: Int?   // under `controlLock` (`Writer+Control.swift`)
    var shutdownError: StoreError?   // what kept the final drain from finishing
    /// Set by ``abandon()``: finish without the clean-shutdown mark.
    var abandoned = false

    // Writer thread only.
    /// The batch parts, in the order they write: ``BatchSection``'s (``BatchParts``).
    let parts: [any BatchPart]
    let compaction: CompactionTask
    let maintenance: MaintenanceTask
    let backups: BackupTask
    /// Background work between batches, asked in this order (``WriterTask``): the integrity
    /// check first (its step only starts its thread, and it must see a damaged file before a
    /// maintenance step stumbles on the damage and stops the writer), then compaction, then
    /// maintenance, then backups.
    let tasks: [any WriterTask]
    /// Holds derived batches while the disk is nearly full (``DiskGuard``).
    let diskGuard: DiskGuard
    var lastCheckpoint: Instant
    var incompleteStreak = 0
    /// The checkpoint interval was found not to hold (`Writer+Checkpoint.swift`): said once.
    var intervalWarningGiven = false
    /// A bulk commit could not switch back to WAL mode (`Writer+Bulk.swift`).
    var walModeLost = false
    /// When to wait, poll, check, retry or give up: the loop's decisions (``WriterSchedule``).
    var schedule: WriterSchedule
    /// Requests waiting for the next batch (`Writer+Requests.swift`).
    var deferredRequests: [WriterRequest] = []
    let walFrames = WalFrameCounter()

    /// The writer of `store`, not started. It and each of its tasks take their settings
    /// from `config` and `options` (``Settings``, ``CompactionTask/Settings``, …).
    init(store: Store, buffer: WriteBuffer, metrics: MetricsRecorder, logger: Logger, config: StrataConfig, options: Engine.Options,
         pageSize: Int, checkpointAtStart: Bool, typeIDs: [Int64?], segmentLog: SegmentLog) {
        let settings = Settings(config: config, options: options, pageSize: pageSize, checkpointAtStart: checkpointAtStart)
        let clock = options.clock
        let context = WriterContext(store: store, buffer: buffer, metrics: metrics, clock: clock, logger: logger,
                                    settings: settings, observer: options.observer, segmentLog: segmentLog)
        self.context = context
        parts = BatchParts.make(operationLog: settings.operationLog, segmentLog: segmentLog, typeIDs: typeIDs,
                                history: settings.history.isOn)
        compaction = CompactionTask(context, .init(config: config, options: options))
        maintenance = MaintenanceTask(context, .init(config: config))
        backups = BackupTask(context, config: config)
        tasks = [IntegrityCheckTask(context, options: options), compaction, maintenance, backups]
        diskGuard = DiskGuard(context, .init(config: config, options: options))
        lastCheckpoint = clock.now()
        schedule = WriterSchedule(now: clock.now(), checkpointInterval: settings.checkpointInterval, pollInterval: settings.pollInterval,
                                  pollLinger: settings.pollLinger, backoff: settings.backoff, shutdownAttempts: settings.shutdownAttempts)
        metrics.update { $0.recordBacklog(segmentLog) }
        context.checkpoints.passive = { [unowned self] in !diskGuard.low && checkpoint(.passive) }
        clock.whenAdvanced { [weak buffer] in buffer?.nudge() }   // a virtual clock's jump: the deadlines moved
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

    /// Stops after the queued batches without marking the session clean (the world's
    /// undrained changes are lost, so the next open must see a crash), and waits.
    func abandon() {
        controlLock.withLock { abandoned = true }
        _ = stop()
    }

    /// See ``WriterContext/reportIfCorrupt(_:)``. Writer thread.
    @discardableResult
    func reportIfCorrupt(_ error: StoreError) -> Bool { context.reportIfCorrupt(error) }

    /// The loop: ask the schedule how long to wait, take what the hand-off has, act.
    private func run() {
        prepareThread()
        loop: while buffer.reportedCorruption == nil {   // corrupt: leave the file, and the batches to the engine
            recordCPUTime()
            let now = clock.now()
            let task = tasks.first { $0.stepDue() }
            expireDeferredRequests()
            let wait = schedule.wait(now: now, stepDue: task != nil,
                                     pollDelay: task == nil && schedule.isPolling(now: now) ? nextPollDelay() : .zero,
                                     retryAt: tasks.compactMap(\.retryAt).min(),
                                     requestDeadline: deferredRequests.lazy.map(\.patienceLeft).min().map { now + $0 })
            switch buffer.take(for: wait.until.duration(since: now), parked: wait.parked) {
            case .batch(let batch):
                if diskGuard.hold(batch) {
                    // Held in the hand-off: look again after a poll's time, at once if a batch merges into it.
                    buffer.pause(for: .milliseconds(100), on: clock, orSubmission: true)
                } else {
                    schedule.tookBatch(at: clock.now())
                    if commitWithRetry(batch) {
                        committed(batch)
                    } else if buffer.reportedCorruption == nil && !retryAfterFailure(batch: true) {
                        break loop
                    }
                }
            case .requests(let requests):
                if !serve(requests) { _ = retryAfterFailure(batch: false) }
            case .timedOut:
                switch schedule.timedOut(now: clock.now(), stepDue: task != nil) {
                case .step:
                    task?.runStep()
                    checkpointIfNeeded()
                case .checkpoint:
                    checkpointIfNeeded()
                case .nothing:
                    break
                }
            case .closed:
                break loop
            }
        }
        finish()
    }
}

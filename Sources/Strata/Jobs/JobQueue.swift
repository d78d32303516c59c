import Foundation
import GRDB
import Logging

/// The document's durable job queue (a queue no crash loses, in the document: the specification, *Durable jobs*):
/// ``Engine/jobs``. Callable from any thread.
///
/// Every call is a `WriterRequest`: SQL on the engine's one write connection, run by
/// the writer thread between the tick thread's batches, with the calls of other threads
/// that arrive meanwhile in ONE transaction (group commit). What each call waits for:
///
/// | call | returns when | durability |
/// |---|---|---|
/// | ``enqueue(_:for:payload:priority:timeout:)`` | committed | FULL: survives a power loss |
/// | ``enqueueSoon(_:for:payload:priority:)`` | at once | FULL, committed with the next critical flush (within the critical delay), in its transaction |
/// | ``claim(kinds:limit:)``, `complete(_:)` (one or many), ``fail(_:error:)`` | committed | NORMAL: survives a crash at once, a power loss after the next sync |
/// | ``retry(_:)``, ``cancel(_:)``, by entity too | committed | FULL |
///
/// A claim lost to a power cut leaves its job pending (it runs again); a completion lost
/// so runs it again too: at least once, never lost. After a *crash*, nothing committed is lost:
/// a job is done exactly once, or pending or failed again.
///
/// An enqueue for an entity whose spawn has not reached the file yet waits for the batch
/// that brings it (the tick thread's next critical flush). So on the tick thread, use
/// ``enqueueSoon(_:for:payload:priority:)``, which rides that flush (no commit and no sync
/// of its own): ``enqueue(_:for:payload:priority:timeout:)`` would wait for a flush only
/// the tick thread can make.
public final class JobQueue: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is guarded by `lock`; the rest is immutable.
    let buffer: WriteBuffer
    let lane: WriterLane
    let config: JobsConfig
    let wallClock: @Sendable () -> Int64
    let logger: Logger
    private let lock = Lock()
    private var paused = false
    /// Jobs claimed through the worker pool and running, by id: their cancellation flags and entities.
    private var running: [Job.ID: (token: CancellationToken, entity: EntityNumber)] = [:]
    /// Told when jobs become runnable (an enqueue, a retry, a resume): idle workers look again.
    var onRunnable: (@Sendable () -> Void)?
    /// Hands a request to the next critical batch (``World/ride(_:)``); set by the engine.
    /// Tick thread.
    var rideNextBatch: ((WriterRequest) -> Void)?
    /// Where ``enqueueSoon(_:for:payload:priority:)`` counts the jobs it did not queue
    /// (``PersistenceMetrics/jobsNotQueued``, ``PersistenceMetrics/jobsLost``); set by the engine.
    var recorder: MetricsRecorder?
    /// Whether the world has the entity now; set by the engine. Tick thread.
    var isInWorld: ((EntityID) -> Bool)?

    init(buffer: WriteBuffer, config: JobsConfig, wallClock: @escaping @Sendable () -> Int64, logger: Logger, paused: Bool) {
        self.buffer = buffer
        self.lane = WriterLane(buffer: buffer)
        self.config = config
        self.wallClock = wallClock
        self.logger = logger
        self.paused = paused
    }

    /// Whether workers take jobs (``Engine/pauseJobs()``; kept in the document's settings).
    public var isPaused: Bool { lock.withLock { paused } }

    func setPaused(_ value: Bool) {
        lock.withLock { paused = value }
        if !value { onRunnable?() }
    }

    // MARK: Enqueue

    /// Adds a job for `entity` unless it has one of this `kind` already (then returns that
    /// one), and returns once it is committed with a sync. Waits at most `timeout` for the
    /// entity's spawn to reach the file (see the type's notes on the tick thread).
    @discardableResult
    public func enqueue(_ kind: String, for entity: EntityID, payload: [UInt8] = [], priority: Int = 0,
                        timeout: Duration = .seconds(30)) throws -> Job {
        let now = wallClock()
        let job: Job = try perform(.full, waitingForBatches: timeout) { db in
            try JobRows.enqueue(db, kind: kind, entity: entity, payload: payload, priority: priority, now: now)
        } orElse: { JobError.unknownEntity(entity) }
        onRunnable?()
        return job
    }

    /// Adds a job like ``enqueue(_:for:payload:priority:timeout:)`` without waiting: it
    /// rides the next critical flush (within the critical delay), in the same transaction
    /// and under the same sync as the world's critical changes made before it (its
    /// entity's spawn among them). For the tick thread. A failure is logged.
    public func enqueueSoon(_ kind: String, for entity: EntityID, payload: [UInt8] = [], priority: Int = 0) {
        let now = wallClock()
        let logger = self.logger
        let recorder = self.recorder
        let rides = rideNextBatch != nil
        guard isInWorld?(entity) ?? true else {
            logger.error("jobs: \(kind) for \(entity) not queued: no such entity in the world")
            recorder?.update { $0.jobsLost += 1 }
            return
        }
        let request = WriterRequest(durability: .full, deadline: Date(timeIntervalSinceNow: 60), onFinish: { [weak self] error in
            switch error {
            case nil:
                self?.onRunnable?()
            case JobError.unknownEntity?:
                // Despawned before its job was saved: the job would have gone with it.
                logger.info("jobs: \(kind) for \(entity) not queued: the entity was despawned first")
                recorder?.update { $0.jobsNotQueued += 1 }
            case let error?:
                logger.error("jobs: enqueue of \(kind) for \(entity) failed: \(error)")
                recorder?.update { $0.jobsLost += 1 }
            }
        }) { db in
            // Riding the batch that holds every change made before it, its entity's spawn
            // among them, an entity not in the file then was despawned in between.
            switch try JobRows.add(db, kind: kind, entity: entity, payload: payload, priority: priority, now: now) {
            case .added: .done
            case .notYet where !rides: .waitForBatch
            case .notYet, .entityDespawned: throw JobError.unknownEntity(entity)
            }
        }
        if buffer.isClosed {
            logger.error("jobs: enqueue of \(kind) for \(entity) after shutdown: not queued")
        } else if let rideNextBatch {
            rideNextBatch(request)
        } else {
            buffer.submit(request)
        }
    }

    // MARK: Running jobs

    /// Marks up to `limit` runnable jobs of `kinds` processing and returns them (by
    /// priority, then age). No job is ever returned to two claims.
    public func claim(kinds: [String], limit: Int = 1) throws -> [Job] {
        try claimNumbered(kinds: kinds, limit: limit).map(\.job)
    }

    /// ``claim(kinds:limit:)`` with each job's entity number (the pool's cancellation on despawn).
    func claimNumbered(kinds: [String], limit: Int) throws -> [(job: Job, entity: EntityNumber)] {
        guard !kinds.isEmpty, limit > 0 else { return [] }
        let now = wallClock()
        return try perform(.normal) { db in try JobRows.claim(db, kinds: kinds, limit: limit, now: now) }
    }

    /// The run succeeded: the job's row goes (or stays `done` for `keep_finished_secs`).
    /// False if the job was cancelled, or went with its entity, while it ran.
    @discardableResult
    public func complete(_ id: Job.ID) throws -> Bool {
        let now = wallClock()
        let keep = config.keepFinished
        return try perform(.normal) { db in try JobRows.complete(db, id: id, now: now, keep: keep) }
    }

    /// Completes several runs in one transaction (a worker that claimed a batch). Returns
    /// how many were still processing.
    @discardableResult
    public func complete(_ ids: [Job.ID]) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        let now = wallClock()
        let keep = config.keepFinished
        return try perform(.normal) { db in try ids.reduce(0) { $0 + (try JobRows.complete(db, id: $1, now: now, keep: keep) ? 1 : 0) } }
    }

    /// The run failed with `error`: the job runs again after a backoff (doubling from
    /// `retry_initial_backoff_ms` to `retry_max_backoff_secs`), or is `dead` after
    /// `max_attempts` runs. Returns the new status; nil if the job was not running.
    @discardableResult
    public func fail(_ id: Job.ID, error: String) throws -> Job.Status? {
        let now = wallClock()
        let (max, backoff) = (config.maxAttempts, backoff)
        return try perform(.normal) { db -> Job.Status?? in
            .some(try JobRows.fail(db, id: id, error: error, now: now, maxAttempts: max, backoff: backoff))
        } ?? nil
    }

    /// The wait before run `attempts + 1`, after `attempts` failed runs.
    func backoff(_ attempts: Int) -> Duration {
        config.backoff.wait(after: Swift.max(attempts, 1))
    }

    // MARK: By hand

    /// A failed, dead or done job runs again, with a fresh count of attempts.
    @discardableResult
    public func retry(_ id: Job.ID) throws -> Bool {
        let changed: Int = try perform(.full) { db in try JobRows.retry(db, where: "id = ?", [id]) }
        if changed > 0 { onRunnable?() }
        return changed > 0
    }

    /// Every failed, dead or done job of `entity` runs again. Returns how many.
    @discardableResult
    public func retry(entity: EntityID) throws -> Int {
        let changed: Int = try perform(.full) { db in
            try JobRows.retry(db, where: "entity_num IN (SELECT num FROM entities WHERE \(EntityIDColumn.matching()))", EntityIDColumn.arguments(for: entity, db))
        }
        if changed > 0 { onRunnable?() }
        return changed
    }

    /// Removes the job; if it is running, its handler is told (``JobContext/isCancelled``)
    /// and its result dropped.
    @discardableResult
    public func cancel(_ id: Job.ID) throws -> Bool {
        let ids: [Job.ID] = try perform(.full) { db in try JobRows.cancel(db, where: "id = ?", [id]) }
        cancelRunning(ids)
        return !ids.isEmpty
    }

    /// Removes every job of `entity` (running ones are told). Returns how many.
    @discardableResult
    public func cancel(entity: EntityID) throws -> Int {
        let ids: [Job.ID] = try perform(.full) { db in
            try JobRows.cancel(db, where: "entity_num IN (SELECT num FROM entities WHERE \(EntityIDColumn.matching()))", EntityIDColumn.arguments(for: entity, db))
        }
        cancelRunning(ids)
        return ids.count
    }

    // MARK: Reading

    /// Jobs by status (all if nil), oldest first, at most `limit`.
    public func jobs(status: Job.Status? = nil, limit: Int = 1000) throws -> [Job] {
        try perform(.normal) { db in
            if let status { return try JobRows.fetch(db, where: "jobs.status = ?", [status.rawValue], limit: limit) }
            return try JobRows.fetch(db, where: "1", limit: limit)
        }
    }

    /// The job, nil if there is none with this id.
    public func job(_ id: Job.ID) throws -> Job? {
        try perform(.normal) { db -> Job?? in .some(try JobRows.fetch(db, where: "jobs.id = ?", [id]).first) } ?? nil
    }

    /// How many jobs there are in each status (the queue's length: `pending` + `failed`).
    public func counts() throws -> [Job.Status: Int] {
        try perform(.normal) { db in try JobRows.counts(db) }
    }

    // MARK: The worker pool's bookkeeping

    func didStart(_ id: Job.ID, entity: EntityNumber, token: CancellationToken) {
        lock.withLock { running[id] = (token, entity) }
    }

    func didFinish(_ id: Job.ID) {
        _ = lock.withLock { running.removeValue(forKey: id) }
    }

    var runningIDs: [Job.ID] { lock.withLock { Array(running.keys) } }

    private func cancelRunning(_ ids: [Job.ID]) {
        let tokens = lock.withLock { ids.compactMap { running[$0]?.token } }
        for token in tokens { token.cancel() }
    }

    /// Entities deleted by a commit: their jobs' rows went with them; their running
    /// handlers are told. Writer thread.
    func entitiesDeleted(_ numbers: [EntityNumber]) {
        let deleted = Set(numbers)
        let tokens = lock.withLock { running.values.filter { deleted.contains($0.entity) }.map(\.token) }
        for token in tokens { token.cancel() }
    }

    /// Runs `body` on the writer and waits for its commit (``WriterLane/perform(_:waitingForBatches:_:orElse:)``).
    func perform<T>(_ durability: Durability, waitingForBatches: Duration = .zero, _ body: @escaping (Database) throws -> T?,
                    orElse missing: @escaping () -> Error = { WriterRequestError.timedOut }) throws -> T {
        try lane.perform(durability, waitingForBatches: waitingForBatches, body, orElse: missing)
    }
}

/// A running job's cancellation: set by ``JobQueue/cancel(_:)`` (or its entity's
/// despawn), read by the handler (cooperative).
public final class CancellationToken: @unchecked Sendable {
    // @unchecked Sendable: `cancelled` is guarded by `lock`.
    private let lock = Lock()
    private var cancelled = false

    public init() {}

    public var isCancelled: Bool { lock.withLock { cancelled } }

    public func cancel() { lock.withLock { cancelled = true } }
}

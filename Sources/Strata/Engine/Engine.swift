import CoreMetrics
import Foundation
import GRDB
import Logging
import Synchronization

/// The persistence engine a simulation host embeds: a ``World`` whose changes reach
/// a WAL-mode SQLite file on tiered schedules, off the tick thread.
///
/// ```swift
/// let engine = try Engine.open(config: config, components: [Transform.self, Metadata.self], logger: logger)
/// print(engine.recovery)                  // crash detected? what was reloaded?
/// while running {
///     simulate(engine.world)              // spawn, insert, mutate… (marks dirty)
///     engine.endTick()                    // hands due tiers to the writer; never waits on SQLite
/// }
/// try engine.shutdown()                   // final flush, clean-shutdown mark, WAL truncated
/// ```
///
/// Threads: the engine and its world belong to the tick thread (the thread of the
/// first call after `open`); the writer is its own thread; ``metrics`` may be read
/// from anywhere.
public final class Engine {
    // The state every tick reads comes first, then the scheduler, whose own hot fields
    // lead: the quiet-period test of ``endTick()`` and ``noteInput()`` read the first
    // three cache lines of the object and nothing else of it (see `endTick`).
    public let world: World
    /// `clock` is a ``MonotonicClock``: read it inline, not through the existential.
    @usableFromInline let clockIsMonotonic: Bool
    @usableFromInline var owner = ThreadOwner()
    /// See `Engine+Monitors.swift`.
    @usableFromInline var powerMonitor: PowerMonitor?
    @usableFromInline var memoryMonitor: MemoryPressureMonitor?
    @usableFromInline var memoryWarningsSeen = 0
    /// The power monitor's `changeCount` when the engine last read it (-1: read it at
    /// the next end of tick).
    @usableFromInline var powerChangesSeen = -1
    /// The sync with a server (`Engine+Sync.swift`), and its inbox's change count when the
    /// tick thread last looked: read by every end of tick, so kept with the monitors.
    @usableFromInline var syncClient: SyncClient?
    @usableFromInline var syncChangesSeen = 0
    @usableFromInline var scheduler: FlushScheduler

    public let config: StrataConfig
    /// What opening the database found (crash, integrity, reload counts).
    public internal(set) var recovery: RecoveryReport
    /// The document's file. A new one if the first was found corrupt while running
    /// (`Engine+StoreReplacement.swift`).
    package internal(set) var store: Store

    let buffer: WriteBuffer
    /// Replaced with the store.
    var writer: Writer
    /// The document's job queue (`Sources/Strata/Jobs`); any thread.
    public let jobs: JobQueue
    /// The document's files (`Sources/Strata/Assets`); any thread.
    public let assets: AssetStore
    /// Handlers registered by kind (``registerJobHandler(_:_:)``), and the pool running them.
    var workers = JobWorkers()
    let recorder: MetricsRecorder
    @usableFromInline let clock: any StrataClock
    let logger: Logger
    /// The batch the next flush drains into: empty, with the capacity of a recycled one.
    var nextBatch = WriteBatch()
    /// The counting VFS the document is opened through (`[metrics] count_fsyncs`: its
    /// figures are in ``metrics``); nil when that is off, or when ``Options/vfs`` names
    /// another VFS. ``PageWrites`` reads which pages its commits wrote. Valid while the
    /// engine is open: at its close the VFS goes back for the next engine to use (the
    /// engine's ``metrics`` keep their figures).
    package var countingVFS: CountingVFS? { vfsLease?.vfs }
    /// The counting VFS's counts since the open (migrations and the session mark are not
    /// this session's writes), frozen at the close.
    let vfsLease: VFSLease?
    /// What the writer was last told of the power and the user (for compaction).
    var writerConditions: WriterConditions.Value?
    /// What the engine was opened with, for the next document (``switchDocument(to:timeout:)``).
    let options: Options
    var isShutDown = false
    /// Where the replacement of a corrupt file is (`Engine+StoreReplacement.swift`).
    var replacement = StoreReplacement.Progress()
    /// The host's hook for pulled operations (`Engine+Sync.swift`).
    var syncApply: ((LoggedOperation) -> Void)?
    /// Told, on the tick thread, each change another device's operation made to this
    /// world (`Engine+Replication.swift`): replicated components apply themselves.
    public var onReplicatedChange: ((ReplicatedChange) -> Void)? {
        didSet { world.replicas.reportsChanges = onReplicatedChange != nil }
    }
    /// The sync's state when it stopped (for a summary after shutdown).
    var stoppedSyncState: SyncState?
    /// Reports the figures through swift-metrics on a thread of its own (`Engine+Metrics.swift`).
    var metricsExporter: MetricsExporter?
    /// The replication status last copied into the metrics (``publishReplicationStatus()``).
    var publishedReplication = ReplicationStatus()

    /// The power state the flush policy uses. Set it when the battery changes; until a
    /// power monitor is attached the engine assumes ``PowerState/assumedAC``.
    public var powerState: PowerState = .assumedAC {
        didSet {
            writer.setMaxWalBytes(scheduler.policy.maxWalBytes(power: powerState))
            onMains = !powerState.onBattery && !powerState.powerSaver
            scheduler.reconsider()
            powerChangesSeen = -1   // a monitor, if attached, still has the last word
        }
    }
    /// On mains power or charging, without the power-saver profile (for compaction and maintenance).
    var onMains = true

    init(world: World, config: StrataConfig, recovery: RecoveryReport, store: Store, buffer: WriteBuffer,
         writer: Writer, jobs: JobQueue, assets: AssetStore, recorder: MetricsRecorder, options: Options, logger: Logger, scheduler: FlushScheduler,
         countingVFS: CountingVFS?) {
        self.jobs = jobs
        self.assets = assets
        let clock = options.clock
        self.options = options
        self.vfsLease = countingVFS.map(VFSLease.init)
        self.world = world
        self.config = config
        self.recovery = recovery
        self.store = store
        self.buffer = buffer
        self.writer = writer
        self.recorder = recorder
        self.clock = clock
        self.clockIsMonotonic = clock is MonotonicClock
        self.logger = logger
        self.scheduler = scheduler
    }

    /// A snapshot of the persistence metrics.
    public var metrics: PersistenceMetrics {
        Self.metrics(recorder: recorder, buffer: buffer, vfs: vfsLease)
    }

    /// The snapshot from the pieces that hold it (any thread: the metrics exporter's too).
    static func metrics(recorder: MetricsRecorder, buffer: WriteBuffer, vfs: VFSLease?) -> PersistenceMetrics {
        var snapshot = recorder.snapshot
        let flushes = buffer.flushCounts
        snapshot.flushCount = flushes.flushes
        snapshot.flushesByReason = flushes.reasons
        snapshot.mergedBatches = flushes.merged
        snapshot.writerWakes = flushes.wakes
        if let vfs { snapshot.vfs = vfs.counts }
        return snapshot
    }

    /// The derived interval the policy applies now.
    public var derivedInterval: Duration {
        scheduler.policy.derivedInterval(power: powerState, activity: activity)
    }

    /// How far ahead of a deadline a tier is flushed: one tick plus the commit budget,
    /// so that a change is committed, not merely handed off, by its deadline.
    public var flushLookahead: Duration { scheduler.lookahead }

    /// The row of the battery table in force now.
    public var powerTier: PowerTier { scheduler.policy.tier(power: powerState) }

    /// Whether the user counts as idle now: no ``noteInput()`` for `idle_after_secs`.
    /// Never idle before the first ``noteInput()``.
    public var activity: Activity { scheduler.activity(now: clock.now()) }

    /// Records user input (for idle detection). Idle detection starts with the first
    /// call: idle (no input for `idle_after_secs`), the derived interval is at least
    /// `idle_flush_interval_secs`, the segment log is compacted eagerly on mains power,
    /// and the file's integrity is checked once a session. A host that never calls this
    /// is never idle.
    @inlinable
    public func noteInput() {
        owner.check("Engine")
        scheduler.noteInput(at: now())
    }

    /// The end of a simulation tick: takes the latest power state and memory warnings,
    /// asks the flush policy, drains the due tiers and hands the batch to the writer.
    /// O(dirty keys); never waits for SQLite.
    ///
    /// Most ends of tick decide nothing: the last decision's quiet period holds, no tier
    /// went from clean to dirty, and no monitor moved. That test is inlined into the
    /// host and reads a few lines at the head of the engine and the world. Between two
    /// ticks the tick thread sleeps and its caches go cold (on the development VM a call
    /// into the engine that takes 0.1 µs warm took 1.4 µs cold, a page or a line at a
    /// time), so what a quiet tick touches is what it costs.
    @inlinable
    public func endTick() {
        owner.check("Engine")
        let now = now()
        if world.tracker.replicaBacklog { logReplicatedChangesAhead() }
        let critical = world.tracker.firstCritical, derived = world.tracker.firstDerived
        if scheduler.isQuiet(now: now, critical: critical, derived: derived), monitorsUnchanged { return }
        // The first critical change since the last flush: its due instant is known.
        if monitorsUnchanged, scheduler.admitCriticalChange(now: now, critical: critical, derived: derived) { return }
        endTickDeciding(at: now)
    }

    /// A backlog of replicated changes is logged a tick's share at a time, not all in
    /// the critical drain's tick (``World/logReplicatedChangesAhead()``).
    @usableFromInline
    func logReplicatedChangesAhead() {
        guard !isShutDown else { return }
        world.logReplicatedChangesAhead()
    }

    /// No monitor has news for the tick thread (power, memory, peers' changes).
    @inlinable @inline(__always)
    var monitorsUnchanged: Bool {
        (powerMonitor.map({ $0.changeCount == powerChangesSeen }) ?? true)
            && (memoryMonitor.map({ $0.warningCount == memoryWarningsSeen }) ?? true)
            && (syncClient.map({ $0.inbox.changes.load(ordering: .relaxed) == syncChangesSeen }) ?? true)
    }

    /// The clock's now; a ``MonotonicClock`` is read inline.
    @inlinable @inline(__always)
    func now() -> Instant {
        clockIsMonotonic ? MonotonicClock().now() : clock.now()
    }

    /// The end of a tick past the quiet-period test: monitors, compaction context, the policy.
    @usableFromInline
    func endTickDeciding(at now: Instant) {
        guard !isShutDown else { return }
        pollMonitors()
        if world.replicas.earliestFuture != nil { releaseDueReplicatedValues(now: now) }
        reportWriterConditions(now: now)
        if scheduler.endTick(world: world, now: now, power: powerState, into: nextBatch) { hand(at: now) }
        // After the decision: the rows a step marks make a tier dirty, whose flush brings
        // this tick back for the next step.
        if !world.olderPayloads.isEmpty { rewriteOlderPayloadsIfIdle() }
    }

    /// Tells the writer when the power source or the user's activity changes: compaction
    /// runs eagerly on mains power while idle, and on battery only past its hard cap.
    private func reportWriterConditions(now: Instant) {
        let context = WriterConditions.Value(onMains: onMains, idle: scheduler.activity(now: now) == .idle)
        guard context != writerConditions else { return }
        writerConditions = context
        writer.setConditions(context)
    }

    /// Records operation-log activity (the specification, *Flush events*): operations from
    /// peers are flushed within the critical delay; the vector clock's rows go with the
    /// first critical flush after `vector_clock_every_operations` operations or
    /// `vector_clock_every_secs` (never a flush of their own: the clock is rebuilt from the log at open).
    public func recordOperations(_ count: Int, fromPeers: Bool) {
        owner.check("Engine")
        guard count > 0 else { return }
        scheduler.recordOperations(count, now: clock.now())
        if fromPeers { flush(reason: .networkOperations) }
    }

    /// Hands `nextBatch` to the writer (unless there is nothing to do) and takes an empty
    /// one back in its place.
    func hand(at now: Instant? = nil) {
        if config.persistence.criticalDurability == .crash { nextBatch.durability = .normal }
        guard !nextBatch.isEmpty || nextBatch.checkpointAfter else {
            nextBatch.reset()
            return
        }
        if buffer.submit(&nextBatch, at: now ?? clock.now()).corrupt { replaceCorruptStore() }
        publishReplicationStatus()
    }

    /// Every thread the engine started stops (workers, sync, monitors, the exporter, the
    /// writer) and the file closes, without a clean-shutdown mark.
    func stopAsACrash() {
        isShutDown = true
        _ = workers.pool?.stop(timeout: .zero)   // as a crash: what runs stays `processing` in the file
        stopSync()
        powerMonitor?.stop()
        memoryMonitor?.stop()
        stopMetricsExport()
        writer.abandon()
        try? store.close()
        vfsLease?.close()
    }

    deinit {
        if !isShutDown {
            logger.warning("engine released without shutdown(): undrained changes are lost; the next open will report a crash")
            stopAsACrash()
        }
    }
}

/// GRDB's connection type, re-exported for ``Engine/Options/prepareConnection``.
package typealias GRDBDatabase = GRDB.Database

import CoreMetrics
import Foundation
import GRDB
import Logging

/// The steps of ``Engine/open(config:components:logger:options:)``, in the order it takes
/// them: check what is there, finish a repair or a replacement a crash cut short, open
/// (repairing a corrupt file), report what was found, mark the jobs a crash interrupted,
/// then make the scheduler, the job queue and the asset store, and start what runs beside
/// the engine. The opening thread.
extension Engine {
    /// Refuses, before anything is written, a document that must exist and does not, and
    /// (for a tool, which must not repair) a damaged one, without a crash on record.
    static func checkBeforeOpening(_ location: StoreLocation, options: Options) throws {
        // A repair cut short between moving the original aside and renaming its salvage into
        // place leaves no file under the name: an engine that may repair finishes it.
        let fm = FileManager.default
        let repairing = options.replaceIfCorrupt && fm.fileExists(atPath: location.repairMarkerPath)
        if !options.createIfMissing && !repairing && !fm.fileExists(atPath: location.path) {
            throw StoreError(.open, message: "no such document (nothing was created)", path: location.path)
        }
        if !options.replaceIfCorrupt && fm.fileExists(atPath: location.path) {
            // Damage the open would not read (jobs, indexes) too.
            if let problem = quickCheck(location) { throw leftAsItIs(problem, path: location.path) }
        }
    }

    /// Finishes what a crash cut short: a corrupt file's replacement while running
    /// (`Engine+StoreReplacement.swift`: what is at PATH is its unfinished copy, set aside
    /// too, and the set-aside file is salvaged instead), and a repair (`Repair.swift`).
    static func finishCutShortRepairs(_ location: StoreLocation, _ storeOptions: Store.Options, options: Options,
                                      logger: Logger) throws -> Repair.Outcome? {
        let fm = FileManager.default
        if let original = try? String(contentsOfFile: location.replacingMarkerPath, encoding: .utf8),
           DocumentLock.owner(of: location) == nil {
            if fm.fileExists(atPath: original) {
                guard options.replaceIfCorrupt else {
                    throw leftAsItIs(StoreError(.corrupt, message: "the replacement of a corrupt file (set aside as \(original)) was cut short", path: location.path),
                                     path: location.path)
                }
                let unfinished = fm.fileExists(atPath: location.path) ? try Repair.setAside(location) : nil
                let cause = "the replacement of a corrupt file was cut short" + (unfinished.map { " (its unfinished copy moved to \($0))" } ?? "")
                logger.error("\(cause): starting a new file with what still reads of \(original)")
                try Repair.adopt(location, original: original, cause: cause)
            }
            try? fm.removeItem(atPath: location.replacingMarkerPath)
        }
        guard fm.fileExists(atPath: location.repairMarkerPath) else { return nil }
        guard options.replaceIfCorrupt else {
            throw leftAsItIs(StoreError(.corrupt, message: "a repair of this document was cut short (\(location.repairMarkerPath))",
                                        path: location.path), path: location.path)
        }
        return try Repair.resume(location, options: storeOptions, logger: logger)
    }

    /// Opens the store and rebuilds the world; a file found corrupt (at the open, in the
    /// check after a crash, or in the reload) is set aside, salvaged into a new one
    /// (`repaired` says so), and that one opened.
    static func openRepairingIfCorrupt(_ location: StoreLocation, _ storeOptions: Store.Options, config: StrataConfig,
                                       components: [any Component.Type], options: Options, logger: Logger,
                                       repaired: inout Repair.Outcome?) throws -> Opened {
        let opened: Opened
        do {
            opened = try openAndLoad(location, storeOptions, config: config, components: components, options: options, logger: logger)
        } catch let error as StoreError where error.isCorruption {
            guard options.replaceIfCorrupt else { throw leftAsItIs(error, path: location.path) }
            try? FileManager.default.removeItem(atPath: location.verifyMarkerPath)
            logger.error("database corrupt (\(error.message)): setting it aside, salvaging what still reads into a new file")
            repaired = try Repair.run(location, cause: error.message, options: storeOptions, logger: logger)
            opened = try openAndLoad(location, storeOptions, config: config, components: components, options: options, logger: logger)
        }
        opened.world.operationLog = opened.operationLog
        return opened
    }

    /// What the open found, said once (a warning after a crash).
    static func report(_ opened: Opened, repaired: Repair.Outcome?, location: StoreLocation, logger: Logger) -> RecoveryReport {
        var recovery = RecoveryReport(session: opened.session, loaded: opened.summary, operations: opened.operations,
                                      setAsideCorruptFile: repaired?.setAside, corruption: repaired?.cause)
        recovery.salvage = repaired?.salvage
        recovery.repairResumed = repaired?.resumed ?? false
        if FileManager.default.fileExists(atPath: location.rejectedPath) {
            recovery.unreadableSideFileLines = SideFile(path: location.rejectedPath).read().unreadableLines.count
        }
        let line = recovery.description.replacingOccurrences(of: "\n", with: "; ")
        if recovery.crashed { logger.warning("\(line)") } else { logger.info("\(line)") }
        return recovery
    }

    /// Jobs a crashed session left running: failed ("interrupted"), to run again.
    static func recoverInterruptedJobs(_ store: Store, config: StrataConfig, options: Options, logger: Logger,
                                       into recovery: inout RecoveryReport) {
        let now = options.wallClock()
        let marking = MonotonicClock().now()
        recovery.interruptedJobs = (try? store.queue.write { db in
            try JobRows.recoverInterrupted(db, now: now, maxAttempts: config.jobs.maxAttempts)
        }) ?? 0
        recovery.interruptedJobsTime = MonotonicClock().now().duration(since: marking)
        if recovery.interruptedJobs > 0 { logger.warning("\(recovery.interruptedJobs) jobs were running when the last session ended: marked interrupted") }
    }

    /// The flush scheduler, its lookahead covering a tick, a commit and the writer's poll;
    /// a vector clock repaired from the log goes with the first flush.
    static func makeScheduler(config: StrataConfig, options: Options, operations: OperationLogSummary, logger: Logger) -> FlushScheduler {
        let lookahead = Duration.nanoseconds(1_000_000_000 / Int64(config.simulation.tickHz)) + options.commitBudget
            + options.writerPollInterval
        var scheduler = FlushScheduler(policy: FlushPolicy(config: config.persistence), now: options.clock.now(), lookahead: lookahead)
        if !operations.vectorClockRepairs.isEmpty {
            logger.warning("vector clock repaired from the operation log: \(operations.vectorClockRepairs.joined(separator: "; "))")
            scheduler.writeVectorClockWithNextFlush(now: options.clock.now())
        }
        return scheduler
    }

    /// The job queue and the asset store, wired to the world and the hand-off.
    static func makeJobsAndAssets(_ opened: Opened, buffer: WriteBuffer, recorder: MetricsRecorder, config: StrataConfig,
                                  options: Options, logger: Logger) -> (JobQueue, AssetStore) {
        let world = opened.world
        let jobs = JobQueue(buffer: buffer, config: config.jobs, wallClock: options.wallClock, logger: logger,
                            paused: world.setting(Engine.jobsPausedKey) == .boolean(true))
        // Strong, not weak: a weak reference gives an object a side table for good, and every
        // retain and release of the world (thousands a tick applying a pull) would take the
        // slow path through it. No cycle: the world refers to no queue. Once the engine
        // stops, its buffer is closed and `enqueueSoon` refuses before it gets here.
        jobs.rideNextBatch = { request in world.ride(request) }
        jobs.recorder = recorder
        jobs.isInWorld = { id in world.entity(for: id) != nil }
        let assets = AssetStore(location: opened.store.location, config: config.assets, lane: jobs.lane, wallClock: options.wallClock,
                                logger: logger)
        buffer.setDeletionListener { [weak jobs, weak assets] numbers in
            jobs?.entitiesDeleted(numbers)
            // Their files: from another thread (the writer runs the requests this makes).
            if let assets { DispatchQueue.global().async { assets.emptyTrash() } }
        }
        return (jobs, assets)
    }

    /// Whether there are assets to reconcile: a document without any opens without a
    /// round trip through the writer.
    static func documentHasAssets(_ store: Store) -> Bool {
        FileManager.default.fileExists(atPath: store.location.assetsPath)
            || ((try? store.queue.read { db in
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM assets) OR EXISTS (SELECT 1 FROM asset_trash)") }) ?? nil) == true
    }

    /// What runs beside the engine once it is made: the metrics exporter, the replacement
    /// of a file found corrupt during a wait at the start, replication, the history
    /// window's check, the assets' reconciliation.
    func startServices(metricsFactory: any MetricsFactory, reconcilingAssets: Bool) {
        startMetricsExport(factory: metricsFactory)
        // A call on the tick thread that waits on the writer while the file is found corrupt
        // (at the start, before the first tick) replaces it there: only that thread can.
        let tickThread = pthread_self()
        let handle = TickThreadHandle(self)
        buffer.setWaitHooks(stop: options.stopWaiting) {
            guard pthread_equal(pthread_self(), tickThread) != 0, let engine = handle.engine else { return }
            engine.replaceCorruptStore()
        }
        openReplication()
        checkHistoryWindow()
        if reconcilingAssets {
            do {
                recovery.assets = try assets.reconcile()
            } catch {
                logger.error("assets: the reconciliation at open failed: \(error)")
            }
        }
    }
}

/// The engine, for a closure other threads hold but only the tick thread runs (it checks
/// the thread before it touches the engine).
private final class TickThreadHandle: @unchecked Sendable {
    weak var engine: Engine?
    init(_ engine: Engine) { self.engine = engine }
}

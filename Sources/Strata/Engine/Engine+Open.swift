import CoreMetrics
import GRDB
import Foundation
import Logging

extension Engine {
    /// Opens (or creates) the database in `config`, detects an unclean shutdown,
    /// rebuilds the world and starts the writer thread.
    ///
    /// A database that SQLite reports corrupt (on open, or in the integrity check after
    /// a crash) is moved aside as `PATH.corrupt-<unix time>`, reported in ``recovery``,
    /// and replaced by a new one holding what still reads of it; nothing is deleted. The
    /// new one is built beside the document and takes its name only when complete, so a
    /// repair cut short (a kill, a power cut) is finished by the next open (`Repair.swift`).
    ///
    /// - Throws: ``StoreError`` with code `.locked` if another process or engine has the
    ///   document open (`DocumentLock`), `.newerSchema` or `.foreign` if the file is not
    ///   one this build may write; the file is then left unchanged.
    ///
    /// - Parameters:
    ///   - config: the configuration (``StrataConfig/load(path:)``, or `StrataConfig()` for the defaults).
    ///   - components: the component types to reload; rows of other types stay untouched.
    ///   - logger: where the engine says what it does (recovery at `info`/`warning`, failures at `error`).
    ///   - options: what is not configuration: the clock, the VFS, a metrics factory, test hooks.
    public static func open(config: StrataConfig, components: [any Component.Type] = [],
                            logger: Logger = Logger(label: "strata"), options: Options = Options()) throws -> Engine {
        guard !config.database.path.utf8.contains(0) else {   // before any file call cuts it there
            throw StoreError(.open, message: "the path holds a NUL character: the file system would end it there", path: config.database.path)
        }
        let countingVFS = config.metrics.countFsyncs && options.vfs == nil ? try CountingVFS.acquire() : nil
        var handedToEngine = false   // else an open that fails gives the VFS back
        defer { if !handedToEngine, let countingVFS { CountingVFS.release(countingVFS) } }
        let location = StoreLocation(path: config.database.path, vfs: options.vfs ?? countingVFS?.name)
        let storeOptions = storeOptions(config: config, options: options)

        // A repair cut short between moving the original aside and renaming its salvage into
        // place leaves no file under the name: an engine that may repair finishes it.
        let repairing = options.replaceIfCorrupt && FileManager.default.fileExists(atPath: location.repairMarkerPath)
        if !options.createIfMissing && !repairing && !FileManager.default.fileExists(atPath: location.path) {
            throw StoreError(.open, message: "no such document (nothing was created)", path: location.path)
        }
        if !options.replaceIfCorrupt && FileManager.default.fileExists(atPath: location.path) {
            // Before the session mark: a tool refusing a damaged file leaves it as it was,
            // without a crash on record. Damage the open would not read (jobs, indexes) too.
            if let problem = quickCheck(location) { throw leftAsItIs(problem, path: location.path) }
        }
        var opened: Opened
        var repaired: Repair.Outcome?
        let fm = FileManager.default
        if let original = try? String(contentsOfFile: location.replacingMarkerPath, encoding: .utf8),
           DocumentLock.owner(of: location) == nil {
            // A replacement of a corrupt file was cut short (`Engine+StoreReplacement.swift`):
            // what is at PATH is its unfinished copy, set aside too. The set-aside file is
            // salvaged instead, as a repair (so a cut now is finished by the next open).
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
        if fm.fileExists(atPath: location.repairMarkerPath) {
            guard options.replaceIfCorrupt else {
                throw leftAsItIs(StoreError(.corrupt, message: "a repair of this document was cut short (\(location.repairMarkerPath))",
                                            path: location.path), path: location.path)
            }
            repaired = try Repair.resume(location, options: storeOptions, logger: logger)
        }
        do {
            opened = try openAndLoad(location, storeOptions, config: config, components: components, options: options, logger: logger)
        } catch let error as StoreError where error.isCorruption {
            // At open, in the integrity check after a crash, or in the reload: the same path.
            guard options.replaceIfCorrupt else { throw leftAsItIs(error, path: location.path) }
            try? FileManager.default.removeItem(atPath: location.verifyMarkerPath)
            logger.error("database corrupt (\(error.message)): setting it aside, salvaging what still reads into a new file")
            repaired = try Repair.run(location, cause: error.message, options: storeOptions, logger: logger)
            opened = try openAndLoad(location, storeOptions, config: config, components: components, options: options, logger: logger)
        }
        let (store, session, world) = (opened.store, opened.session, opened.world)
        let (summary, typeIDs, segmentLog) = (opened.summary, opened.typeIDs, opened.segmentLog)
        let operations = opened.operations
        world.operationLog = opened.operationLog
        var recovery = RecoveryReport(session: session, loaded: summary, operations: operations,
                                      setAsideCorruptFile: repaired?.setAside, corruption: repaired?.cause)
        recovery.salvage = repaired?.salvage
        recovery.repairResumed = repaired?.resumed ?? false
        if fm.fileExists(atPath: location.rejectedPath) {
            recovery.unreadableSideFileLines = SideFile(path: location.rejectedPath).read().unreadableLines.count
        }
        if recovery.crashed {
            logger.warning("\(recovery.description.replacingOccurrences(of: "\n", with: "; "))")
        } else {
            logger.info("\(recovery.description.replacingOccurrences(of: "\n", with: "; "))")
        }

        // Jobs a crashed session left running: failed ("interrupted"), to run again.
        let now = options.wallClock()
        let marking = MonotonicClock().now()
        recovery.interruptedJobs = (try? store.queue.write { db in
            try JobRows.recoverInterrupted(db, now: now, maxAttempts: config.jobs.maxAttempts)
        }) ?? 0
        recovery.interruptedJobsTime = MonotonicClock().now().duration(since: marking)
        if recovery.interruptedJobs > 0 { logger.warning("\(recovery.interruptedJobs) jobs were running when the last session ended: marked interrupted") }

        let metricsFactory = options.metricsFactory ?? MetricsSystem.factory
        let recorder = MetricsRecorder(timers: MetricsTimers(factory: metricsFactory))
        recorder.update {
            $0.crashRecoveryCount = session.crashCount
            $0.cleanShutdownCount = session.cleanShutdownCount
        }
        let buffer = WriteBuffer()
        let policy = FlushPolicy(config: config.persistence)
        let writer = try makeWriter(config: config, options: options, store: store, buffer: buffer, recorder: recorder,
                                    logger: logger, typeIDs: typeIDs, segmentLog: segmentLog, checkpointAtStart: recovery.crashed)
        let lookahead = Duration.nanoseconds(1_000_000_000 / Int64(config.simulation.tickHz)) + options.commitBudget
            + options.writerPollInterval
        var scheduler = FlushScheduler(policy: policy, now: options.clock.now(), lookahead: lookahead)
        if !operations.vectorClockRepairs.isEmpty {
            logger.warning("vector clock repaired from the operation log: \(operations.vectorClockRepairs.joined(separator: "; "))")
            scheduler.writeVectorClockWithNextFlush(now: options.clock.now())
        }
        let jobs = JobQueue(buffer: buffer, config: config.jobs, wallClock: options.wallClock, logger: logger,
                            paused: world.setting(Engine.jobsPausedKey) == .boolean(true))
        // Strong, not weak: a weak reference gives an object a side table for good, and every
        // retain and release of the world (thousands a tick applying a pull) would take the
        // slow path through it. No cycle: the world refers to no queue. Once the engine
        // stops, its buffer is closed and `enqueueSoon` refuses before it gets here.
        jobs.rideNextBatch = { request in world.ride(request) }
        jobs.recorder = recorder
        jobs.isInWorld = { id in world.entity(for: id) != nil }
        let assets = AssetStore(location: store.location, config: config.assets, lane: jobs.lane, wallClock: options.wallClock,
                                logger: logger)
        buffer.setDeletionListener { [weak jobs, weak assets] numbers in
            jobs?.entitiesDeleted(numbers)
            // Their files: from another thread (the writer runs the requests this makes).
            if let assets { DispatchQueue.global().async { assets.emptyTrash() } }
        }
        // Reconciled only where there is something to reconcile: a document without assets
        // opens without a round trip through the writer.
        let hasAssets = FileManager.default.fileExists(atPath: store.location.assetsPath)
            || ((try? store.queue.read { db in
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM assets) OR EXISTS (SELECT 1 FROM asset_trash)") }) ?? nil) == true
        writer.start()
        handedToEngine = true
        let engine = Engine(world: world, config: config, recovery: recovery, store: store, buffer: buffer, writer: writer, jobs: jobs,
                            assets: assets, recorder: recorder, options: options, logger: logger, scheduler: scheduler, countingVFS: countingVFS)
        engine.startMetricsExport(factory: metricsFactory)
        // A call on the tick thread that waits on the writer while the file is found corrupt
        // (at the start, before the first tick) replaces it there: only that thread can.
        let tickThread = pthread_self()
        let handle = TickThreadHandle(engine)
        buffer.setWaitHooks(stop: options.stopWaiting) {
            guard pthread_equal(pthread_self(), tickThread) != 0, let engine = handle.engine else { return }
            engine.replaceCorruptStore()
        }
        engine.openReplication()
        engine.checkHistoryWindow()
        if hasAssets {
            do {
                engine.recovery.assets = try assets.reconcile()
            } catch {
                logger.error("assets: the reconciliation at open failed: \(error)")
            }
        }
        return engine
    }

    /// The store's options, from the configuration and the engine's options.
    static func storeOptions(config: StrataConfig, options: Options) -> Store.Options {
        var storeOptions = Store.Options()
        storeOptions.pageSize = config.database.pageSize
        storeOptions.autoVacuum = config.database.autoVacuum
        storeOptions.busyTimeout = config.writer.busyTimeout
        storeOptions.journalSizeLimitBytes = config.persistence.maxWalSizeBytes
        storeOptions.prepareConnection = options.prepareConnection
        storeOptions.startCheckAge = options.replaceIfCorrupt ? config.maintenance.startCheckAge : .zero   // tools quick_check anyway
        return storeOptions
    }

    /// The writer of `store`, not started.
    static func makeWriter(config: StrataConfig, options: Options, store: Store, buffer: WriteBuffer, recorder: MetricsRecorder,
                           logger: Logger, typeIDs: [Int64?], segmentLog: SegmentLog, checkpointAtStart: Bool) throws -> Writer {
        Writer(store: store, buffer: buffer, metrics: recorder, logger: logger, config: config, options: options,
               pageSize: try store.pageSize(), checkpointAtStart: checkpointAtStart, typeIDs: typeIDs, segmentLog: segmentLog)
    }

    /// A store opened, its session begun and its world rebuilt.
    private struct Opened {
        var store: Store
        var session: SessionState
        var world: World
        var summary: LoadSummary
        var typeIDs: [Int64?]
        var segmentLog: SegmentLog
        var operationLog: OperationLog
        var operations: OperationLogSummary
    }

    /// Opens the store, begins the session and rebuilds the world. A file SQLite finds
    /// damaged while the world is read is a corruption error (the store is closed), like
    /// one it cannot open.
    private static func openAndLoad(_ location: StoreLocation, _ storeOptions: Store.Options, config: StrataConfig,
                                    components: [any Component.Type], options: Options, logger: Logger) throws -> Opened {
        let (store, session) = try openVerified(location, storeOptions)
        do {
            let world = World(clock: options.clock)
            for type in components { world.register(any: type) }
            world.register(ReplicaState.self)
            let (summary, typeIDs, segmentLog) = try store.load(into: world, logger: logger)
            let (operationLog, operations) = try store.loadOperationLog(wallClock: options.wallClock,
                                                                        maxSkewMilliseconds: Int64(config.sync.maxClockAhead.milliseconds))
            return Opened(store: store, session: session, world: world, summary: summary, typeIDs: typeIDs,
                          segmentLog: segmentLog, operationLog: operationLog, operations: operations)
        } catch {
            try? store.close()
            throw StoreError(.read, wrapping: error, path: location.path)
        }
    }

    /// `PRAGMA quick_check` on a read-only connection of its own (it changes nothing, and
    /// removes the `-wal`/`-shm` it made): nil if the file passes (or SQLite cannot open it
    /// for another reason: the open itself says so), else the corruption.
    static func quickCheck(_ location: StoreLocation) -> StoreError? {
        let plain = StoreLocation(path: location.path)
        let before = plain.companions
        defer { plain.removeCompanionsMadeByReading(before: before) }
        do {
            let queue = try plain.readOnlyQueue()
            defer { try? queue.close() }
            let problems = try queue.inDatabase { db in try String.fetchAll(db, sql: "PRAGMA quick_check(10)") }.filter { $0 != "ok" }
            guard !problems.isEmpty else { return nil }
            return StoreError(.corrupt, message: "quick_check: \(problems.joined(separator: "; "))", path: location.path)
        } catch {
            let failure = StoreError(.open, wrapping: error, path: location.path)
            return failure.isCorruption ? failure : nil
        }
    }

    /// Opens the store and begins the session; a failed integrity check after a crash
    /// is a corruption error, like a file SQLite cannot read.
    static func openVerified(_ location: StoreLocation, _ options: Store.Options) throws -> (Store, SessionState) {
        let store = try Store(location: location, options: options)
        do {
            let marked = FileManager.default.fileExists(atPath: location.verifyMarkerPath)
            let session = try store.beginSession(fullCheck: marked, startCheckAge: options.startCheckAge)
            guard session.integrityOK else {
                throw StoreError(.corrupt, message: "integrity check failed: \(session.integrity ?? "")", path: location.path)
            }
            if marked { try? FileManager.default.removeItem(atPath: location.verifyMarkerPath) }
            return (store, session)
        } catch {
            try? store.close()
            throw error
        }
    }
}

/// The engine, for a closure other threads hold but only the tick thread runs (it checks
/// the thread before it touches the engine).
private final class TickThreadHandle: @unchecked Sendable {
    weak var engine: Engine?
    init(_ engine: Engine) { self.engine = engine }
}

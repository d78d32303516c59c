import CoreMetrics
import GRDB
import Foundation
import Logging

extension Engine {
    /// Opens (or creates) the database in `config`, detects an unclean shutdown,
    /// rebuilds the world and starts the writer thread (the steps: `Engine+OpenSteps.swift`).
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

        try checkBeforeOpening(location, options: options)
        var repaired = try finishCutShortRepairs(location, storeOptions, options: options, logger: logger)
        let opened = try openRepairingIfCorrupt(location, storeOptions, config: config, components: components, options: options,
                                                logger: logger, repaired: &repaired)
        var recovery = report(opened, repaired: repaired, location: location, logger: logger)
        recoverInterruptedJobs(opened.store, config: config, options: options, logger: logger, into: &recovery)

        let metricsFactory = options.metricsFactory ?? MetricsSystem.factory
        let recorder = MetricsRecorder(timers: MetricsTimers(factory: metricsFactory))
        recorder.update {
            $0.crashRecoveryCount = opened.session.crashCount
            $0.cleanShutdownCount = opened.session.cleanShutdownCount
        }
        let buffer = WriteBuffer()
        let writer = try makeWriter(config: config, options: options, store: opened.store, buffer: buffer, recorder: recorder,
                                    logger: logger, typeIDs: opened.typeIDs, segmentLog: opened.segmentLog, checkpointAtStart: recovery.crashed)
        let scheduler = makeScheduler(config: config, options: options, operations: opened.operations, logger: logger)
        let (jobs, assets) = makeJobsAndAssets(opened, buffer: buffer, recorder: recorder, config: config, options: options, logger: logger)
        let hasAssets = documentHasAssets(opened.store)
        writer.start()
        handedToEngine = true
        let engine = Engine(world: opened.world, config: config, recovery: recovery, store: opened.store, buffer: buffer, writer: writer,
                            jobs: jobs, assets: assets, recorder: recorder, options: options, logger: logger, scheduler: scheduler,
                            countingVFS: countingVFS)
        engine.startServices(metricsFactory: metricsFactory, reconcilingAssets: hasAssets)
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
    struct Opened {
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
    static func openAndLoad(_ location: StoreLocation, _ storeOptions: Store.Options, config: StrataConfig,
                                    components: [any Component.Type], options: Options, logger: Logger) throws -> Opened {
        let (store, session) = try openVerified(location, storeOptions)
        do {
            let world = World(clock: options.clock)
            for type in components { world.register(any: type) }
            world.register(ReplicaState.self)
            // The operation log is read beside the world, on a connection of its own.
            let log = try store.loadOperationLog(wallClock: options.wallClock,
                                                 maxSkewMilliseconds: Int64(config.sync.maxClockAhead.milliseconds))
            let loaded = Result { try store.load(into: world, logger: logger) }
            let logged = Result { try log.wait() }   // joined either way; the world's error first
            let (summary, typeIDs, segmentLog) = try loaded.get()
            let (operationLog, operations) = try logged.get()
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

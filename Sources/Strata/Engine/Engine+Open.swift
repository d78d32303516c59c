import Foundation
import Logging

extension Engine {
    /// Opens (or creates) the database in `config`, detects an unclean shutdown,
    /// rebuilds the world and starts the writer thread.
    ///
    /// A database that SQLite reports corrupt (on open, or in the integrity check after
    /// a crash) is moved aside as `PATH.corrupt-<unix time>`, reported in ``recovery``,
    /// and replaced by a new one; nothing is deleted.
    ///
    /// - Parameters:
    ///   - components: the component types to reload; rows of other types stay untouched.
    public static func open(config: StrataConfig, components: [any Component.Type] = [],
                            logger: Logger = Logger(label: "strata"), options: Options = Options()) throws -> Engine {
        let location = StoreLocation(path: config.database.path, vfs: options.vfs)
        var storeOptions = Store.Options()
        storeOptions.pageSize = config.database.pageSize
        storeOptions.busyTimeout = config.writer.busyTimeout
        storeOptions.journalSizeLimitBytes = config.persistence.maxWalSizeBytes
        storeOptions.prepareConnection = options.prepareConnection

        var setAside: String?
        var corruption: String?
        var (store, session) = try openAndBegin(location, storeOptions)
        if let error = session.error ?? (session.state?.integrityOK == false ? StoreError(.corrupt, message: session.state!.integrity!, path: location.path) : nil) {
            guard error.isCorruption else { throw error }
            try? store?.close()
            corruption = error.message
            setAside = try setAsideCorruptFiles(location)
            logger.error("database corrupt (\(error.message)); moved to \(setAside!), starting a new one")
            (store, session) = try openAndBegin(location, storeOptions)
            if let error = session.error { throw error }
        }
        guard let store, var state = session.state else { throw StoreError(.open, message: "no store", path: location.path) }
        if setAside != nil {
            // The crash (or corruption) that led here is still worth counting.
            state.previous = .crashed
        }

        let world = World(clock: options.clock)
        for type in components { world.register(any: type) }
        let (summary, typeIDs) = try store.load(into: world, logger: logger)
        let recovery = RecoveryReport(session: state, loaded: summary, setAsideCorruptFile: setAside, corruption: corruption)
        if recovery.crashed {
            logger.warning("\(recovery.description.replacingOccurrences(of: "\n", with: "; "))")
        } else {
            logger.info("\(recovery.description.replacingOccurrences(of: "\n", with: "; "))")
        }

        let recorder = MetricsRecorder()
        recorder.update {
            $0.crashRecoveryCount = state.crashCount
            $0.cleanShutdownCount = state.cleanShutdownCount
        }
        let buffer = WriteBuffer()
        let policy = FlushPolicy(config: config.persistence)
        let writer = Writer(
            store: store, buffer: buffer, metrics: recorder, clock: options.clock, logger: logger,
            settings: Writer.Settings(
                retryInitialBackoff: config.writer.retryInitialBackoff,
                retryMaxBackoff: config.writer.retryMaxBackoff,
                checkpointInterval: config.persistence.checkpointInterval,
                maxWalBytes: policy.maxWalBytes(power: .assumedAC),
                pageSize: config.database.pageSize),
            typeIDs: typeIDs)
        let lookahead = Duration.nanoseconds(1_000_000_000 / Int64(config.simulation.tickHz)) + options.commitBudget
        let scheduler = FlushScheduler(policy: policy, now: options.clock.now(), lookahead: lookahead)
        writer.start()
        return Engine(world: world, config: config, recovery: recovery, store: store, buffer: buffer, writer: writer,
                      recorder: recorder, clock: options.clock, logger: logger, scheduler: scheduler)
    }

    private static func openAndBegin(_ location: StoreLocation, _ options: Store.Options)
        throws -> (Store?, (state: SessionState?, error: StoreError?)) {
        let store: Store
        do {
            store = try Store(location: location, options: options)
        } catch let error as StoreError where error.isCorruption {
            return (nil, (nil, error))
        }
        do {
            return (store, (try store.beginSession(), nil))
        } catch let error as StoreError where error.isCorruption {
            return (store, (nil, error))
        }
    }

    /// Moves the database and its WAL and shared-memory files aside; returns the new path.
    static func setAsideCorruptFiles(_ location: StoreLocation) throws -> String {
        let stamp = Int(Date().timeIntervalSince1970)
        let target = "\(location.path).corrupt-\(stamp)"
        let fm = FileManager.default
        for (from, suffix) in [(location.path, ""), (location.walPath, "-wal"), (location.shmPath, "-shm")]
            where fm.fileExists(atPath: from) {
            try fm.moveItem(atPath: from, toPath: target + suffix)
        }
        return target
    }
}

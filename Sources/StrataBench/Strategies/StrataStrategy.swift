import Foundation
import Logging
import Strata

/// Strata itself: the workload in a World, `endTick()` every tick, the writer thread
/// committing on the tiers' schedules under a given power state.
///
/// The setup (not measured) spawns the world, folds its first batch into the base rows
/// and checkpoints, so the run starts from a compacted file, as a game resumes one.
/// The user counts as active throughout (input every tick), so no idle interval or
/// idle fold happens during a run.
final class StrataStrategy: BenchStrategy {
    let name: String
    let power: PowerState?
    let settings: Settings
    let log = DurabilityLog()
    private var engine: Engine?
    private var config = StrataConfig()
    private var entities: [Entity] = []
    private var startMetrics = PersistenceMetrics()
    private var observer: DurabilityObserver?
    private(set) var vfs: CountingVFS?
    private var endMetrics: PersistenceMetrics?
    private(set) var fileBytes: Int?
    private(set) var historyBytesPerSecond: Double?
    private var historyAtStart: HistoryWindow?

    /// What a run may change from the defaults.
    struct Settings {
        /// `database.page_size`.
        var pageSize: Int?
        /// `database.auto_vacuum`.
        var autoVacuum: AutoVacuum?
        /// `compaction.backlog_mb`, in bytes (small, so that compaction happens during a run).
        var backlogBytes: Int?
        var compactionMethod: CompactionPolicy.Method?
        /// `history.keep_secs`.
        var history: Duration?
    }

    /// `power`: nil for the default (no power monitor: mains power without a battery).
    init(name: String, power: PowerState?, settings: Settings = Settings()) {
        self.name = name
        self.power = power
        self.settings = settings
    }

    /// The derived interval the default policy gives this strategy's power state.
    var derivedInterval: Duration {
        FlushPolicy(config: PersistenceConfig()).derivedInterval(power: power ?? .assumedAC, activity: .active)
    }

    var summary: String {
        let label = power.map { "\($0)" } ?? "default config (no battery known: the desktop tier)"
        var extras: [String] = []
        if let pageSize = settings.pageSize { extras.append("\(pageSize)-byte pages") }
        if let autoVacuum = settings.autoVacuum { extras.append("auto_vacuum \(autoVacuum.rawValue)") }
        if let backlog = settings.backlogBytes { extras.append("compaction past \(backlog / 1024) KB of log") }
        if let method = settings.compactionMethod { extras.append("always \(method.rawValue)") }
        if let history = settings.history { extras.append("a \(Int(history.seconds)) s history window") }
        return "Strata, \(label): derived every \(Int(derivedInterval.seconds)) s, critical within 1 s"
            + (extras.isEmpty ? "" : "; " + extras.joined(separator: ", "))
    }

    private var runMetrics: (start: PersistenceMetrics, end: PersistenceMetrics)? {
        endMetrics.map { (startMetrics, $0) }
    }
    var rowsWritten: Int {
        guard let (start, end) = runMetrics else { return 0 }
        return end.componentRowsWritten + end.componentRowsDeleted + end.entityRowsInserted
            - start.componentRowsWritten - start.componentRowsDeleted - start.entityRowsInserted
    }
    var persistedPayloadBytes: Int {
        guard let (start, end) = runMetrics else { return 0 }
        return end.payloadBytesWritten - start.payloadBytesWritten
    }
    var compactions: (rounds: Int, steps: Int)? {
        guard let (start, end) = runMetrics else { return nil }
        return (end.compactionRounds - start.compactionRounds, end.compactionSteps - start.compactionSteps)
    }
    var backgroundCPU: Duration {
        guard let (start, end) = runMetrics else { return .zero }
        return end.writerCPUTime - start.writerCPUTime
    }

    func prepare(entities count: Int, directory: URL) throws {
        config.database.path = directory.appendingPathComponent("\(name).db").path
        if let pageSize = settings.pageSize { config.database.pageSize = pageSize }
        if let autoVacuum = settings.autoVacuum { config.database.autoVacuum = autoVacuum }
        if let history = settings.history { config.history.keep = history }
        if let backlog = settings.backlogBytes {
            config.compaction.backlogBytes = backlog
            config.compaction.idleBacklogBytes = min(config.compaction.idleBacklogBytes, backlog)
        }
        let vfs = try CountingVFS.register(name: "strata-bench-\(name)-\(UUID().uuidString.prefix(8))")
        self.vfs = vfs
        var options = Engine.Options()
        options.vfs = vfs.name
        let observer = DurabilityObserver(log: log)
        options.observer = observer
        options.compactionMethod = settings.compactionMethod
        options.idleIntegrityCheck = false   // a whole-file read mid-run would be measured with the strategy
        self.observer = observer
        let engine = try Engine.open(config: config, components: [BenchTransform.self, BenchLabel.self],
                                     logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }), options: options)
        if let power { engine.powerState = power }
        entities = (0 ..< count).map { i in
            engine.world.spawn(BenchTransform(x: 0, y: Float(i)), BenchLabel(text: "entity \(i)", revision: 0))
        }
        engine.compactNow(timeout: .seconds(600))
        engine.flushNow(reason: .explicitSave)   // and a checkpoint: the fold's pages are in the file
        fileBytes = (try? FileManager.default.attributesOfItem(atPath: config.database.path)[.size] as? Int) ?? nil
        observer.measuring = true
        startMetrics = engine.metrics
        historyAtStart = settings.history == nil ? nil : try? engine.history()
        self.engine = engine
    }

    func tick(_ tick: BenchTick) throws {
        guard let engine else { return }
        apply(tick, to: engine.world, entities: entities, log: log)
        engine.noteInput()
        engine.endTick()
    }

    func finish() throws {
        // Everything changed during the run is persisted and checkpointed before the
        // counters are read: the main file's copy of every page the run wrote counts too
        // (without this, pages committed since the last checkpoint would be left out).
        engine?.flushNow(reason: .explicitSave)
        endMetrics = engine?.metrics
        // What the run added to the window (the setup's save is in it too, and is not the run's).
        if settings.history != nil, let start = historyAtStart, let window = try? engine?.history(),
           window.endMilliseconds > start.endMilliseconds {
            historyBytesPerSecond = Double(window.bytes - start.bytes) / (Double(window.endMilliseconds - start.endMilliseconds) / 1000)
        }
    }

    func close() throws {
        try engine?.shutdown()
        engine = nil
    }

    /// Opens the file as the next session would (base rows, then the log left at the end
    /// of the run) and rebuilds the world.
    func reload() throws -> Duration? {
        let clock = MonotonicClock()
        let start = clock.now()
        let engine = try Engine.open(config: config, components: [BenchTransform.self, BenchLabel.self],
                                     logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        let elapsed = clock.now().duration(since: start)
        precondition(engine.world.entityCount == entities.count, "reloaded \(engine.world.entityCount) of \(entities.count) entities")
        try engine.shutdown()
        return elapsed
    }
}

/// Turns the engine's commits and checkpoints into durability events: a commit is
/// crash-safe at once; power-safe when the WAL is next synced (a FULL commit, or a
/// complete checkpoint).
final class DurabilityObserver: PersistenceObserver, @unchecked Sendable {
    // @unchecked Sendable: `unsynced` and `measuring` are only touched under `lock`.
    private let lock = NSLock()
    private let log: DurabilityLog
    private var unsynced: [(Tier, Instant)] = []
    private var _measuring = false

    init(log: DurabilityLog) { self.log = log }

    var measuring: Bool {
        get { lock.withLock { _measuring } }
        set { lock.withLock { _measuring = newValue } }
    }

    func didCommit(_ record: CommitRecord) {
        lock.withLock {
            guard _measuring else { return }
            for (tier, drained) in record.drained {
                log.crashSafe(tier, at: record.committedAt, covers: drained)
                unsynced.append((tier, drained))
            }
            if record.durability == .full { syncAll(at: record.committedAt) }
        }
    }

    func didCheckpoint(_ record: CheckpointRecord) {
        lock.withLock {
            guard _measuring, record.complete else { return }
            syncAll(at: record.at)
        }
    }

    private func syncAll(at: Instant) {
        for (tier, covers) in unsynced { log.powerSafe(tier, at: at, covers: covers) }
        unsynced.removeAll()
    }
}

import Foundation
import Logging
import Strata

/// Strata itself: the workload in a World, `endTick()` every tick, the writer thread
/// committing on the tiers' schedules under a given power state.
final class StrataStrategy: BenchStrategy {
    let name: String
    let power: PowerState?
    let log = DurabilityLog()
    private var engine: Engine?
    private var entities: [Entity] = []
    private var baselineRows = 0
    private var observer: DurabilityObserver?
    private(set) var vfs: CountingVFS?
    private var endMetrics: PersistenceMetrics?

    /// `power`: nil for the default (no power monitor: mains power without a battery).
    init(name: String, power: PowerState?) {
        self.name = name
        self.power = power
    }

    /// The derived interval the default policy gives this strategy's power state.
    var derivedInterval: Duration {
        FlushPolicy(config: PersistenceConfig()).derivedInterval(power: power ?? .assumedAC, activity: .active)
    }

    var summary: String {
        let label = power.map { "\($0)" } ?? "default config (no battery known: the desktop tier)"
        return "Strata, \(label): derived every \(Int(derivedInterval.seconds)) s, critical within 1 s"
    }

    var rowsWritten: Int { (endMetrics?.componentRowsWritten ?? 0) + (endMetrics?.entityRowsInserted ?? 0) - baselineRows }
    var backgroundCPU: Duration { endMetrics?.writerCPUTime ?? .zero }

    func prepare(entities count: Int, directory: URL) throws {
        var config = StrataConfig()
        config.database.path = directory.appendingPathComponent("\(name).db").path
        let vfs = try CountingVFS.register(name: "strata-bench-\(name)-\(UUID().uuidString.prefix(8))")
        self.vfs = vfs
        var options = Engine.Options()
        options.vfs = vfs.name
        let observer = DurabilityObserver(log: log)
        options.observer = observer
        self.observer = observer
        let engine = try Engine.open(config: config, components: [BenchTransform.self, BenchLabel.self],
                                     logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }), options: options)
        if let power { engine.powerState = power }
        entities = (0 ..< count).map { i in
            engine.world.spawn(BenchTransform(x: 0, y: Float(i)), BenchLabel(text: "entity \(i)", revision: 0))
        }
        engine.flushNow(reason: .explicitSave)
        observer.measuring = true
        baselineRows = engine.metrics.componentRowsWritten + engine.metrics.entityRowsInserted
        self.engine = engine
    }

    func tick(_ tick: BenchTick) throws {
        guard let engine else { return }
        apply(tick, to: engine.world, entities: entities, log: log)
        engine.endTick()
    }

    func finish() throws {
        // Let the writer finish what was handed off during the run (it is part of the run).
        engine?.waitForWriter()
        endMetrics = engine?.metrics
    }

    func close() throws {
        try engine?.shutdown()
        engine = nil
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

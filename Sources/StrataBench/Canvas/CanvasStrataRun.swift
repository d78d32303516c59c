import Foundation
import Logging
import Strata
import StrataCanvas

/// Strata persisting the canvas (`strata sim`'s document): shapes created, dragged and
/// deleted, strokes drawn, metadata edited, every edit an operation in the log, a
/// thumbnail job (and its file) for each finished stroke, a second device's operations
/// arriving, on the default configuration.
///
/// The setup (not measured) grows the canvas to its shapes, saves it, folds the log into
/// the base rows and checkpoints, so the run starts from a saved canvas, as a user
/// reopening it would. Tick thread.
final class CanvasStrataRun {
    let name: String
    let power: PowerState?
    /// Multiplies the rate of every edit (`strata-busy`: about 100 operations a second).
    let activity: Double
    let log = DurabilityLog()
    /// Other strategies' logs that count the same changes (the snapshots watching this canvas).
    var watchers: [DurabilityLog] = [] {
        didSet { changes?.logs = [log] + watchers }
    }
    private(set) var engine: Engine?
    private(set) var scenario: CanvasScenario?
    private(set) var vfs: CountingVFS?
    private var config = StrataConfig()
    private var observer: DurabilityObserver?
    private var changes: ChangeLog?
    private var startMetrics = PersistenceMetrics()
    private(set) var endMetrics: PersistenceMetrics?
    private(set) var pages = PageWrites()
    /// The first save: bytes written, and the file it produced.
    private(set) var setupBytes = 0
    private(set) var fileBytes = 0
    private(set) var shapes = 0
    /// The largest WAL seen during the run (sampled between ticks).
    private(set) var walPeakBytes = 0

    /// `database` settings the run changes from the defaults (`--page-size`, `--auto-vacuum`).
    let pageSize: Int?
    let autoVacuum: AutoVacuum?

    init(name: String, power: PowerState?, activity: Double = 1, pageSize: Int? = nil, autoVacuum: AutoVacuum? = nil) {
        self.name = name
        self.power = power
        self.activity = activity
        self.pageSize = pageSize
        self.autoVacuum = autoVacuum
    }

    var databasePath: String { config.database.path }

    var summary: String {
        let label = power.map { "\($0)" } ?? "default config (no battery known: the desktop tier)"
        let derived = FlushPolicy(config: PersistenceConfig()).derivedInterval(power: power ?? .assumedAC, activity: .active)
        return "Strata persisting the canvas, \(label): derived every \(Int(derived.seconds)) s, critical within 1 s"
            + (activity == 1 ? "" : String(format: "; every edit %.0f× as often (about %.0f operations a second)", activity, activity * 5.5))
            + (pageSize.map { "; \($0)-byte pages" } ?? "") + (autoVacuum.map { "; auto_vacuum \($0.rawValue)" } ?? "")
    }

    func prepare(shapes count: Int, directory: URL, hz: Int) throws {
        config.database.path = directory.appendingPathComponent("\(name).db").path
        config.simulation.tickHz = hz
        if let pageSize { config.database.pageSize = pageSize }
        if let autoVacuum { config.database.autoVacuum = autoVacuum }
        let vfs = try CountingVFS.register(name: "strata-canvas-\(name)-\(UUID().uuidString.prefix(8))")
        self.vfs = vfs
        var options = Engine.Options()
        options.vfs = vfs.name
        let observer = DurabilityObserver(log: log)
        options.observer = observer
        options.idleIntegrityCheck = false   // a whole-file read mid-run would be measured with the run
        self.observer = observer
        let engine = try Engine.open(config: config, components: canvasComponents,
                                     logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }), options: options)
        if let power { engine.powerState = power }
        Thumbnails.start(on: engine, trace: nil)
        let changes = ChangeLog(logs: [log])
        self.changes = changes
        let scenario = CanvasScenario(engine: engine, targetShapes: count, hz: hz, seed: 1, trace: changes, activity: activity)
        changes.recording = false
        while scenario.shapes.count < count {
            scenario.step()
            engine.endTick()
        }
        engine.flushNow(reason: .explicitSave)
        engine.compactNow(timeout: .seconds(600))
        engine.flushNow(reason: .explicitSave)   // and a checkpoint: the fold's pages are in the file
        setupBytes = vfs.counts.writeBytes
        fileBytes = (try? FileManager.default.attributesOfItem(atPath: databasePath)[.size] as? Int) ?? 0
        shapes = scenario.shapes.count
        changes.recording = true
        observer.measuring = true
        startMetrics = engine.metrics
        vfs.recordPageWrites(true)
        self.engine = engine
        self.scenario = scenario
    }

    /// One tick of the canvas, persisted as Strata does.
    func tick(at now: Instant) {
        guard let engine, let scenario else { return }
        changes?.now = now
        scenario.step()
        if scenario.isEditing { changes?.changed(.derived) }
        engine.endTick()
    }

    /// Between ticks: the WAL's size, and the page numbers the VFS holds (so it never
    /// holds many).
    func sample() {
        guard let engine else { return }
        walPeakBytes = max(walPeakBytes, engine.store.location.walBytes)
        if let vfs { pages.take(from: vfs) }
    }

    /// Everything changed during the run is committed and checkpointed before the
    /// counters are read: the main file's copy of the pages counts too.
    func finish() {
        guard let engine else { return }
        engine.flushNow(reason: .explicitSave)
        sample()
        vfs?.recordPageWrites(false)
        endMetrics = engine.metrics
    }

    /// What the run changed, from the metrics.
    var run: (start: PersistenceMetrics, end: PersistenceMetrics)? { endMetrics.map { (startMetrics, $0) } }

    func close() throws {
        try engine?.shutdown()
        engine = nil
        scenario = nil
    }

    /// Reopens the canvas as the next session would and rebuilds the world.
    func reload() throws -> Duration {
        let clock = MonotonicClock()
        let start = clock.now()
        let engine = try Engine.open(config: config, components: canvasComponents,
                                     logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        let elapsed = clock.now().duration(since: start)
        try engine.shutdown()
        return elapsed
    }
}

/// The canvas's changes as the durability log counts them: every critical change and
/// every operation logged is critical; a pan of the viewport is derived (drags and
/// strokes in progress are counted by the run, tick by tick). Each is dated at the start
/// of its tick (`now`), so the log's changes stay in time order.
private final class ChangeLog: CanvasObserver {
    var logs: [DurabilityLog]
    var recording = true
    var now = MonotonicClock().now()

    init(logs: [DurabilityLog]) { self.logs = logs }

    func record(_ change: CanvasChange, _ id: EntityID) {
        switch change {
        case .pan: changed(.derived)
        default: changed(.critical)
        }
    }

    func changed(_ tier: Tier) {
        guard recording else { return }
        for log in logs { log.changed(tier, at: now) }
    }
}

import Foundation
import Logging
import Strata
import StrataCanvas

/// What every torture mode shares: the directory, the document, the configuration, the
/// seed, and the canvas driven in real time.
struct TortureSetup {
    let directory: URL
    let config: StrataConfig
    let seed: UInt64
    let logger: Logger

    var databasePath: String { config.database.path }

    /// The configuration torture runs with: delays short enough that a cycle of under a
    /// second commits every tier, checkpoints and compacts, so faults land in all of it.
    /// The contract is checked against these delays.
    static func config(databasePath: String) -> StrataConfig {
        var config = StrataConfig()
        config.database.path = databasePath
        config.simulation.tickHz = 120
        config.persistence.criticalFlushDelay = .milliseconds(250)
        config.persistence.batteryAdaptive = false
        config.persistence.flushInterval = .milliseconds(500)
        config.persistence.checkpointInterval = .seconds(1)
        config.persistence.maxWalSizeBytes = 256 * 1024
        config.persistence.power.source = .fallback
        config.writer.retryInitialBackoff = .milliseconds(5)
        config.writer.retryMaxBackoff = .milliseconds(100)
        config.compaction.idleBacklogBytes = 32 * 1024
        config.compaction.backlogBytes = 64 * 1024
        config.compaction.maxBacklogBytes = 1024 * 1024
        config.metrics.countFsyncs = false
        return config
    }

    /// A change of the derived tier is committed at most this long after it is made
    /// (its interval, plus the writer's poll and the commit).
    var derivedCommitBound: Duration { config.persistence.flushInterval + Self.commitSlack }

    /// A critical change is committed and synced at most this long after it is made (its
    /// delay, plus the writer's poll and the commit). The slack is the derived bound's: a
    /// debug build on a loaded machine (`make test`'s parts side by side on two cores) was
    /// seen to start a due flush 160 ms late; a change lost past this bound is a broken
    /// contract, and how old the oldest lost change was is reported apart
    /// (`worstCriticalAtRiskMs`), a figure, not a check.
    var criticalCommitBound: Duration { config.persistence.criticalFlushDelay + Self.commitSlack }

    /// What a commit may take beyond its tier's delay: the writer's poll, the commit, its sync.
    static let commitSlack = Duration.milliseconds(250)

    /// The shapes the canvas grows to, and how much busier than `strata sim` it is.
    static let shapes = 30
    static let activity = 5.0

    func scenario(_ engine: Engine, seed: UInt64, trace: (any CanvasObserver)?) -> CanvasScenario {
        CanvasScenario(engine: engine, targetShapes: Self.shapes, hz: config.simulation.tickHz, seed: seed,
                       trace: trace, activity: Self.activity)
    }

    /// Runs the canvas on a fixed tick in real time for `duration`.
    func run(_ scenario: CanvasScenario, on engine: Engine, for duration: Duration) {
        let clock = MonotonicClock()
        let tick = Duration.nanoseconds(1_000_000_000 / Int64(config.simulation.tickHz))
        let end = clock.now() + duration
        var next = clock.now()
        while clock.now() < end {
            scenario.step()
            engine.endTick()
            next = next + tick
            let wait = next.duration(since: clock.now())
            if wait > .zero { usleep(UInt32(max(1, wait.nanoseconds / 1000))) }
        }
    }

    /// Copies the document's files into `folder` (for a failure to be replayed and read).
    func keepFiles(in folder: String) -> String {
        let fm = FileManager.default
        try? fm.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-journal"] where fm.fileExists(atPath: databasePath + suffix) {
            let target = folder + "/" + URL(fileURLWithPath: databasePath).lastPathComponent + suffix
            try? fm.removeItem(atPath: target)
            try? fm.copyItem(atPath: databasePath + suffix, toPath: target)
        }
        return folder
    }

    /// Keeps a failed cycle: the copy of the files as the fault left them (`copy`, made
    /// before the reopen recovered them) and the trace, as `name` in the directory.
    func keepFailure(_ copy: String, trace: String, as name: String) -> String {
        let kept = directory.appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: kept)
        try? FileManager.default.moveItem(atPath: copy, toPath: kept)
        try? FileManager.default.copyItem(atPath: trace, toPath: kept + "/trace.txt")
        return kept
    }

    /// Removes the document and its companions.
    /// The document and every file beside it (set-aside copies, markers, parked rows).
    func removeDocument() {
        let name = URL(fileURLWithPath: databasePath).lastPathComponent
        let folder = URL(fileURLWithPath: databasePath).deletingLastPathComponent()
        for file in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] where file.hasPrefix(name) {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(file))
        }
    }
}

extension SplitMix64 {
    /// A uniform duration in `range` (seconds).
    mutating func duration(in range: ClosedRange<Double>) -> Duration {
        .nanoseconds(Int64(Double.random(in: range, using: &self) * 1e9))
    }
}

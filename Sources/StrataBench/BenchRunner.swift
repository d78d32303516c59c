import Foundation
import Strata
import StrataCanvas

/// What to run.
package struct BenchOptions: Codable, Sendable, Equatable {
    /// Entities in the world (N).
    package var entities = 1000
    /// Entities moving every tick (M ≤ N).
    package var moving = 1000
    /// Simulated seconds per strategy (S).
    package var seconds = 6.0
    /// A Strata tier whose derived interval is at most this runs 2.5 intervals (if
    /// longer than S), so its bytes and risks include derived flushes; longer intervals
    /// would take minutes and run S only.
    package var coverIntervalsUpToSecs = 10.0
    package var hz = 60
    /// Seconds between snapshots of the snapshot strategy (K).
    package var snapshotEverySecs = 5.0
    package var strategies = BenchRunner.strategyNames
    /// Also run Strata at N/10, M/10, to show its sync rate does not grow with N or M.
    package var scalingCheck = true
    /// Strata's `database.page_size` (nil: the default).
    package var strataPageSize: Int?
    /// Strata's `database.auto_vacuum`, `incremental` or `none` (nil: the default).
    package var strataAutoVacuum: String?
    /// Strata's `compaction.backlog_mb`, in bytes (nil: the default): small, so that
    /// compaction happens during a run and its cost is in the figures.
    package var strataBacklogBytes: Int?
    /// Strata compacts with this method only (`merge`, `fold`; nil: the cheaper).
    package var strataCompactionMethod: String?
    /// Strata keeps a history window this long (`[history] keep_secs`; nil: none).
    package var strataHistory: Duration?
    /// The canvas sweep also runs Strata busy (about 100 operations a second) and on
    /// battery at its smallest size.
    package var canvasExtras = true

    package init() {}
}

/// One strategy's measurements.
package struct StrategyResult: Codable, Sendable {
    package var name: String
    package var summary: String
    package var entities: Int
    package var moving: Int
    package var ticks: Int
    package var simulatedSeconds: Double
    package var wallSeconds: Double
    /// Ticks per second reached (the target is `hz`).
    package var tickRateHz: Double
    package var heldTickRate: Bool
    package var syncRequests: Int
    package var syncRequestsPerSec: Double
    /// Sync requests over the whole life of the strategy's database (setup and shutdown
    /// included): what `strace -c` of the process compares to.
    package var syncRequestsWholeProcess: Int
    /// Sync requests per file kind: `main_db`, `wal`, `journal`, `other`, `file` (non-SQLite).
    package var syncsByKind: [String: Int]
    /// Bytes written per file kind, as above.
    package var bytesByKind: [String: Int]
    package var bytesWritten: Int
    package var bytesWrittenPerSec: Double
    package var writeCalls: Int
    /// Encoded bytes of the components that changed (what had to be saved).
    package var changedBytes: Int
    package var bytesPerChangedByte: Double
    package var rowsWritten: Int
    /// Encoded payload bytes of the rows written: what was persisted, before storage overhead.
    package var persistedPayloadBytes: Int
    /// Bytes written per row persisted, and per payload byte persisted.
    package var bytesPerPersistedRow: Double
    package var bytesPerPayloadByte: Double
    package var tickP50Ms: Double
    package var tickP99Ms: Double
    /// The median, over the run's 10-second windows, of each window's p99 (the run's
    /// p99 when it is shorter than three windows). A burst of interference (this VM's
    /// host taking the CPU for a moment) lifts one window, not this figure; a cost that
    /// comes back every few seconds lifts every window.
    package var tickP99WindowMedianMs: Double
    package var tickMaxMs: Double
    /// CPU time on the tick thread (updates and persistence calls).
    package var tickCpuMs: Double
    /// CPU time of background threads (Strata's writer, the snapshot writer).
    package var backgroundCpuMs: Double
    /// The same per simulated second.
    package var backgroundCpuMsPerSec: Double
    package var risk: RiskSummary
    /// Opening what was persisted and rebuilding the world, after the run (nil: nothing to reload).
    package var reloadMs: Double?
    /// Building the world and saving it the first time: not part of the rates above.
    package var setupSeconds: Double
    package var setupBytes: Int
    /// Compaction rounds and steps during the run.
    package var compactionRounds: Int?
    package var compactionSteps: Int?
    /// Strata: the file the setup produced (its first save), in bytes.
    package var fileBytes: Int?
    /// Strata with `--history-secs`: bytes its history window keeps per second of window.
    package var historyBytesPerSec: Double?
    /// Strata: transactions committed to the WAL during the run, the pages they wrote per
    /// commit, and per commit by B-tree (``PageWrites``).
    package var commits: Int?
    package var pagesPerCommit: Double?
    package var pagesByTree: [String: Double]?
    /// Strata: the largest WAL during the run, checkpoints, operations logged per second,
    /// and the engine's alerts at the end.
    package var walPeakBytes: Int?
    package var checkpoints: Int?
    package var operationsPerSec: Double?
    package var alerts: [String]?
    /// Strata: of `persistedPayloadBytes`, the replicated entities' stamps (the engine's own).
    package var stampPayloadBytes: Int?
    /// Strata: of `persistedPayloadBytes`, the host's data (``PayloadShares``: its components
    /// and the operations logged on its device), the operations among them the engine derived
    /// from synced components, and those received from another device; bytes written per
    /// byte of the host's data, the headline.
    package var hostPayloadBytes: Int?
    package var derivedOperationPayloadBytes: Int?
    package var receivedOperationPayloadBytes: Int?
    package var bytesPerHostByte: Double?
}

/// A whole run.
package struct BenchResults: Codable, Sendable {
    package var options: BenchOptions
    package var command: String
    package var date: String
    package var machine: String
    package var results: [StrategyResult]
}

/// Runs the workload under each strategy, paced in real time: the baseline and Strata together
/// in one tick loop, the others one after another.
package enum BenchRunner {
    package static let strategyNames = ["baseline", "naive", "tick-full", "tick-normal", "snapshot",
                                       "strata", "strata-charging", "strata-high", "strata-medium", "strata-low"]

    static func makeStrategy(_ name: String, options: BenchOptions) throws -> any BenchStrategy {
        switch name {
        case "baseline": return BaselineStrategy()
        case "twin": return BaselineStrategy(name: "twin")
        case "naive": return try SQLiteStrategy(.naive)
        case "tick-full": return try SQLiteStrategy(.tickFull)
        case "tick-normal": return try SQLiteStrategy(.tickNormal)
        case "snapshot": return SnapshotStrategy(every: .nanoseconds(Int64(options.snapshotEverySecs * 1e9)))
        case "strata", "strata-scaling": return StrataStrategy(name: name, power: nil, settings: try strataSettings(options))
        case "strata-charging": return StrataStrategy(name: name, power: .charging(50), settings: try strataSettings(options))
        case "strata-high": return StrataStrategy(name: name, power: .discharging(75), settings: try strataSettings(options))
        case "strata-medium": return StrataStrategy(name: name, power: .discharging(35), settings: try strataSettings(options))
        case "strata-low": return StrataStrategy(name: name, power: .discharging(10), settings: try strataSettings(options))
        default:
            // `snapshot-Ks`: a snapshot every K seconds.
            if name.hasPrefix("snapshot-"), name.hasSuffix("s"), let k = Double(name.dropFirst(9).dropLast()), k > 0 {
                return SnapshotStrategy(name: name, every: .nanoseconds(Int64(k * 1e9)))
            }
            throw BenchError("unknown strategy \"\(name)\"; known: \(strategyNames.joined(separator: ", ")), twin, snapshot-<K>s")
        }
    }

    static func strataSettings(_ options: BenchOptions) throws -> StrataStrategy.Settings {
        var settings = StrataStrategy.Settings(pageSize: options.strataPageSize, backlogBytes: options.strataBacklogBytes,
                                               history: options.strataHistory)
        if let mode = options.strataAutoVacuum {
            guard let parsed = AutoVacuum(rawValue: mode) else {
                throw BenchError("unknown auto_vacuum \"\(mode)\"; known: \(AutoVacuum.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.autoVacuum = parsed
        }
        if let method = options.strataCompactionMethod {
            guard let parsed = CompactionPolicy.Method(rawValue: method) else {
                throw BenchError("unknown compaction method \"\(method)\"; known: merge, fold")
            }
            settings.compactionMethod = parsed
        }
        return settings
    }

    package struct BenchError: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs every selected strategy in a fresh folder under `directory`.
    package static func run(_ options: BenchOptions, directory: URL, command: String,
                           progress: (String) -> Void = { _ in }) throws -> BenchResults {
        guard options.moving <= options.entities else { throw BenchError("--moving must not exceed --entities") }
        var runs: [(String, Int, Int)] = options.strategies.map { ($0, options.entities, options.moving) }
        if options.scalingCheck && options.strategies.contains("strata") {
            runs.append(("strata-scaling", max(1, options.entities / 10), max(1, options.moving / 10)))
        }
        var results: [StrategyResult] = []
        for group in tickedTogether(runs.map(\.0)) {
            let (_, entities, moving) = runs.first { $0.0 == group[0] }!
            let strategies = try group.map { try makeStrategy($0, options: options) }
            let folder = directory.appendingPathComponent(group.joined(separator: "+"))
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let seconds = runSeconds(strategies, options: options)
            progress("\(group.joined(separator: " with ")): N=\(entities) M=\(moving), \(seconds) s…")
            for result in try runTogether(strategies, entities: entities, moving: moving, seconds: seconds, options: options, folder: folder) {
                progress(String(format: "  %@: %.1f Hz, %ld sync requests, %ld bytes", result.name as NSString, result.tickRateHz,
                                result.syncRequests, result.bytesWritten))
                results.append(result)
            }
        }
        let order = runs.map(\.0)
        results.sort { (order.firstIndex(of: $0.name) ?? 0) < (order.firstIndex(of: $1.name) ?? 0) }
        return BenchResults(options: options, command: command, date: ISO8601DateFormatter().string(from: Date()),
                            machine: machineDescription(), results: results)
    }

    /// Simulated seconds for a group: S, or 2.5 derived intervals of a Strata tier whose
    /// interval is at most `coverIntervalsUpToSecs`, so that its derived flushes are in the figures.
    static func runSeconds(_ strategies: [any BenchStrategy], options: BenchOptions) -> Double {
        var seconds = options.seconds
        for case let strata as StrataStrategy in strategies where strata.derivedInterval.seconds <= options.coverIntervalsUpToSecs {
            seconds = max(seconds, 2.5 * strata.derivedInterval.seconds)
        }
        return seconds
    }

    /// The strategies in the order they run, those that tick in one loop grouped: the
    /// baseline with Strata (default config) and the twin (a second baseline, when asked
    /// for), whose tick times are the side-by-side comparison; every other strategy alone
    /// (one that blocks its tick on a sync would hold up the loop, and the other's pace
    /// with it).
    static func tickedTogether(_ names: [String]) -> [[String]] {
        guard names.contains("baseline") else { return names.map { [$0] } }
        let together = ["baseline", "strata", "twin"].filter(names.contains)
        var groups: [[String]] = []
        for name in names where !together.contains(name) || name == "baseline" {
            groups.append(name == "baseline" ? together : [name])
        }
        return groups
    }

    /// What is measured of one strategy while it runs.
    private struct Measuring {
        var strategy: any BenchStrategy
        var setupSeconds = 0.0
        var setupBytes = 0
        var fileBytes: Int?
        var vfsBefore: VFSCounts?
        var tickTimes: [Duration] = []
        var tickCPU: Duration = .zero
    }

    /// Runs `strategies` on the same workload in ONE tick loop: each tick, every strategy
    /// applies it in turn, each timed on its own. Strategies run together see the same
    /// machine at the same moments, so their tick times compare without the drift between
    /// runs minutes apart (this VM's p99 moved by a third from one run to the next). The
    /// loop keeps the strictest pace.
    ///
    /// Which strategy goes first is drawn each tick (a seeded generator, so a run is
    /// repeatable). An order that alternated from tick to tick was not fair: this VM has a
    /// disturbance every 100 ms (6 ticks, an even number) that slows whatever runs at one
    /// phase of the tick, and that phase drifts so slowly that for seconds at a time it
    /// fell on the same strategy's turn every time (per-tick times showed 15–25 slowed
    /// ticks of +50 µs in a row on one side, more than the p99 of a 20 s run counts).
    static func runTogether(_ strategies: [any BenchStrategy], entities: Int, moving: Int, seconds: Double, options: BenchOptions,
                            folder: URL) throws -> [StrategyResult] {
        let clock = MonotonicClock()
        var runs: [Measuring] = []
        for strategy in strategies {
            let setupStart = clock.now()
            let directory = strategies.count == 1 ? folder : folder.appendingPathComponent(strategy.name)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try strategy.prepare(entities: entities, directory: directory)
            var run = Measuring(strategy: strategy)
            run.setupSeconds = clock.now().duration(since: setupStart).seconds
            run.setupBytes = (strategy.vfs?.counts.writeBytes ?? 0) + (strategy.ownDiskCounts?.bytes ?? 0)
            run.fileBytes = strategy.fileBytes
            run.vfsBefore = strategy.vfs?.counts
            runs.append(run)
        }
        let plannedTicks = Int(seconds * Double(options.hz))
        for i in runs.indices { runs[i].tickTimes.reserveCapacity(plannedTicks) }
        var changedBytes = 0
        let transformBytes = BenchPayload.transform(0, 0).count
        var order = SplitMix64(seed: 0x5EED_0F_7)
        var turns = Array(runs.indices)
        let pacer = RealTimePacer(hz: options.hz, seconds: seconds)
        let start = pacer.start
        var ticks = 0
        while ticks < plannedTicks, pacer.wait(forTick: ticks) {
            let critical = ticks % options.hz == 0 ? (ticks / options.hz) % entities : nil
            let tick = BenchTick(index: ticks, time: clock.now(), moving: moving, stride: max(1, entities / max(moving, 1)),
                                 criticalEntity: critical)
            turns.shuffle(using: &order)
            for i in turns {
                let cpuStart = threadCPUTime()
                let tickStart = clock.now()
                try runs[i].strategy.tick(tick)
                runs[i].tickTimes.append(clock.now().duration(since: tickStart))
                runs[i].tickCPU += threadCPUTime() - cpuStart
            }
            changedBytes += moving * transformBytes + (critical.map { BenchPayload.label(entity: $0, revision: ticks).count } ?? 0)
            ticks += 1
        }
        let end = clock.now()
        // STRATA_BENCH_TICKS=FOLDER: each strategy's tick times, one per line in µs (to find which ticks are slow).
        if let folder = ProcessInfo.processInfo.environment["STRATA_BENCH_TICKS"] {
            for run in runs {
                let text = run.tickTimes.map { String(format: "%.1f", $0.milliseconds * 1000) }.joined(separator: "\n")
                try? text.write(toFile: "\(folder)/\(run.strategy.name)-\(entities).ticks", atomically: true, encoding: .utf8)
            }
        }
        return try runs.map { run in
            try result(of: run, ticks: ticks, plannedTicks: plannedTicks, start: start, end: end, changedBytes: changedBytes,
                       entities: entities, moving: moving, options: options)
        }
    }

    private static func result(of run: Measuring, ticks: Int, plannedTicks: Int, start: Instant, end: Instant, changedBytes: Int,
                               entities: Int, moving: Int, options: BenchOptions) throws -> StrategyResult {
        let strategy = run.strategy
        try strategy.finish()
        let vfs = strategy.vfs.map { $0.counts.since(run.vfsBefore!) }
        let risk = strategy.log.risk(from: start + .seconds(1), to: end)
        let backgroundCPU = strategy.backgroundCPU
        let rows = strategy.rowsWritten
        let payload = strategy.persistedPayloadBytes
        let compactions = strategy.compactions
        let own = strategy.ownDiskCounts
        try strategy.close()
        let reload = try strategy.reload()
        let wholeProcess = (strategy.vfs?.counts.syncs ?? 0) + (own?.syncs ?? 0)

        let simulated = Double(ticks) / Double(options.hz)
        let wall = end.duration(since: start).seconds
        let syncs = (vfs?.syncs ?? 0) + (own?.syncs ?? 0)
        let bytes = (vfs?.writeBytes ?? 0) + (own?.bytes ?? 0)
        var byKind: [String: Int] = [:]
        var bytesByKind: [String: Int] = [:]
        if let vfs {
            byKind = ["main_db": vfs.mainDatabase.syncs, "wal": vfs.wal.syncs, "journal": vfs.journal.syncs, "other": vfs.other.syncs]
            bytesByKind = ["main_db": vfs.mainDatabase.writeBytes, "wal": vfs.wal.writeBytes, "journal": vfs.journal.writeBytes,
                           "other": vfs.other.writeBytes]
        }
        if let own {
            byKind["file"] = own.syncs
            bytesByKind["file"] = own.bytes
        }
        let times = TickTimes(run.tickTimes, window: options.hz * 10)
        let rate = Double(ticks) / max(wall, 0.001)
        var result = StrategyResult(
            name: strategy.name, summary: strategy.summary, entities: entities, moving: moving,
            ticks: ticks, simulatedSeconds: simulated, wallSeconds: wall, tickRateHz: rate,
            heldTickRate: ticks == plannedTicks && rate >= Double(options.hz) * 0.95,
            syncRequests: syncs, syncRequestsPerSec: Double(syncs) / max(simulated, 0.001),
            syncRequestsWholeProcess: wholeProcess, syncsByKind: byKind, bytesByKind: bytesByKind,
            bytesWritten: bytes, bytesWrittenPerSec: Double(bytes) / max(simulated, 0.001),
            writeCalls: (vfs?.writes ?? 0) + (own?.writes ?? 0),
            changedBytes: changedBytes, bytesPerChangedByte: changedBytes == 0 ? 0 : Double(bytes) / Double(changedBytes),
            rowsWritten: rows, persistedPayloadBytes: payload,
            bytesPerPersistedRow: rows == 0 ? 0 : Double(bytes) / Double(rows),
            bytesPerPayloadByte: payload == 0 ? 0 : Double(bytes) / Double(payload),
            tickP50Ms: times.p50, tickP99Ms: times.p99, tickP99WindowMedianMs: times.p99WindowMedian, tickMaxMs: times.max,
            tickCpuMs: run.tickCPU.milliseconds, backgroundCpuMs: backgroundCPU.milliseconds,
            backgroundCpuMsPerSec: backgroundCPU.milliseconds / max(simulated, 0.001), risk: risk,
            reloadMs: reload?.milliseconds, setupSeconds: run.setupSeconds, setupBytes: run.setupBytes,
            compactionRounds: compactions?.rounds, compactionSteps: compactions?.steps)
        result.fileBytes = run.fileBytes
        result.historyBytesPerSec = run.strategy.historyBytesPerSecond
        return result
    }

    /// The median of the p99s of consecutive windows of `window` ticks (a partial last
    /// window is left out); nil with fewer than three windows.
    static func windowMedianP99(_ times: [Duration], window: Int) -> Double? {
        guard window > 0, times.count / window >= 3 else { return nil }
        let p99s = stride(from: 0, through: times.count - window, by: window).map { start -> Double in
            let sorted = times[start ..< start + window].sorted()
            return sorted[min(window - 1, Int(Double(window) * 0.99))].milliseconds
        }.sorted()
        let mid = p99s.count / 2
        return p99s.count % 2 == 1 ? p99s[mid] : (p99s[mid - 1] + p99s[mid]) / 2
    }

    static func machineDescription() -> String {
        var info = utsname()
        uname(&info)
        let release = withUnsafeBytes(of: &info.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let memory = ProcessInfo.processInfo.physicalMemory / 1_073_741_824
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(memory) GiB, Linux \(release)"
    }
}

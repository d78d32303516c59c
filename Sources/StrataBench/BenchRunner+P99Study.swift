import Foundation
import Strata

/// One run of a tick-p99 study: the baseline, Strata and the twin ticked in one loop.
package struct P99Run: Codable, Sendable {
    package var baselineP99Ms: Double
    package var strataP99Ms: Double
    package var twinP99Ms: Double
    package var baselineP50Ms: Double
    package var strataP50Ms: Double
    package var twinP50Ms: Double

    /// Strata's p99 over the baseline's: what the side-by-side target judges.
    package var strataRatio: Double { strataP99Ms / baselineP99Ms }
    /// The twin's over the baseline's: the same figure when both sides do the same work.
    package var twinRatio: Double { twinP99Ms / baselineP99Ms }
}

/// The runs of one world size.
package struct P99StudyPoint: Codable, Sendable {
    package var entities: Int
    package var moving: Int
    package var runs: [P99Run]

    package var strataRatios: RatioSummary { RatioSummary(runs.map(\.strataRatio)) }
    package var twinRatios: RatioSummary { RatioSummary(runs.map(\.twinRatio)) }
}

/// The spread of one ratio over a study's runs.
package struct RatioSummary: Codable, Sendable, Equatable {
    package var median: Double
    package var least: Double
    package var most: Double
    /// Runs whose ratio is at most 1.10 (within 10 %).
    package var within10Percent: Int
    package var count: Int

    package init(_ ratios: [Double]) {
        let sorted = ratios.sorted()
        count = sorted.count
        least = sorted.first ?? 0
        most = sorted.last ?? 0
        within10Percent = sorted.filter { $0 <= 1.1 }.count
        let mid = sorted.count / 2
        median = sorted.isEmpty ? 0 : sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}

/// `strata bench --repeat K`: the tick-p99 comparison, K times at every size.
package struct P99Study: Codable, Sendable {
    package var options: BenchOptions
    package var command: String
    package var date: String
    package var machine: String
    package var points: [P99StudyPoint]
}

extension BenchRunner {
    /// What a study ticks in one loop: the baseline, Strata, and the twin (the baseline's
    /// work on a world of its own).
    package static let p99StudyStrategies = ["baseline", "strata", "twin"]

    /// Runs the baseline, Strata and the twin together, `runs` times at every size in
    /// `sizes` (`min(moving, N)` moving), each run in a fresh folder removed afterwards,
    /// each strategy prepared first in turn.
    ///
    /// Why repeat: a run's tick p99 is its 1 %-slowest tick, a few ticks of a short run,
    /// and on a shared VM a moment of interference decides them. Ten 12.5 s runs of the
    /// same build at N = M = 1k read Strata's p99 at 0.99–1.56× the baseline's. The twin
    /// does exactly the baseline's work, so its ratio shows how far the harness alone
    /// moves the figure; the median of the runs is the estimate the target is judged on.
    package static func p99Study(_ options: BenchOptions, sizes: [Int], runs: Int, directory: URL, command: String,
                                progress: (String) -> Void = { _ in }) throws -> P99Study {
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 1 }) else { throw BenchError("a study needs sizes of at least 1") }
        guard runs >= 1 else { throw BenchError("--repeat needs at least 1 run") }
        var points: [P99StudyPoint] = []
        for entities in sizes {
            let moving = min(options.moving, entities)
            var point = P99StudyPoint(entities: entities, moving: moving, runs: [])
            for run in 1 ... runs {
                // Prepared in an order rotated from run to run: where a world's memory lands
                // depends on what was allocated before it, and at N = 100k the world prepared
                // first ran its median tick up to 11 % slower than an identical one (twin
                // 0.89× the baseline in ten runs with the baseline always first).
                let shift = (run - 1) % p99StudyStrategies.count
                let names = Array(p99StudyStrategies[shift...] + p99StudyStrategies[..<shift])
                let strategies = try names.map { try makeStrategy($0, options: options) }
                let folder = directory.appendingPathComponent("p99-\(entities)-\(run)")
                try? FileManager.default.removeItem(at: folder)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let seconds = runSeconds(strategies, options: options)
                let results = try runTogether(strategies, entities: entities, moving: moving, seconds: seconds, options: options, folder: folder)
                let byName = Dictionary(uniqueKeysWithValues: results.map { ($0.name, $0) })
                guard let baseline = byName["baseline"], let strata = byName["strata"], let twin = byName["twin"] else {
                    throw BenchError("a study run lost a strategy")
                }
                let measured = P99Run(baselineP99Ms: baseline.tickP99Ms, strataP99Ms: strata.tickP99Ms, twinP99Ms: twin.tickP99Ms,
                                      baselineP50Ms: baseline.tickP50Ms, strataP50Ms: strata.tickP50Ms, twinP50Ms: twin.tickP50Ms)
                point.runs.append(measured)
                progress(String(format: "N=%d M=%d run %d/%d (%.1f s): p99 baseline %.3f, Strata %.3f (%.2f×), twin %.3f ms (%.2f×)",
                                entities, moving, run, runs, seconds, baseline.tickP99Ms, strata.tickP99Ms, measured.strataRatio,
                                twin.tickP99Ms, measured.twinRatio))
            }
            points.append(point)
        }
        return P99Study(options: options, command: command, date: ISO8601DateFormatter().string(from: Date()),
                        machine: machineDescription(), points: points)
    }
}

import Foundation
import Strata

/// One world size of a sweep: every strategy on the same workload.
package struct SweepPoint: Codable, Sendable {
    package var entities: Int
    package var moving: Int
    package var results: [StrategyResult]
}

/// A sweep over world sizes (`strata bench --sweep-entities …`).
package struct SweepResults: Codable, Sendable {
    package var options: BenchOptions
    package var command: String
    package var date: String
    package var machine: String
    package var points: [SweepPoint]
    /// `canvas` for the canvas sweep (``BenchRunner/canvasSweep(_:sizes:directory:command:progress:)``); nil: components.
    package var workload: String?
}

extension BenchRunner {
    /// What a sweep compares at every size: no persistence, a whole-world snapshot every
    /// second (the one that matches the 1 s critical guarantee) and every 5 s (what a game
    /// save plugin does), and Strata.
    package static let sweepStrategies = ["baseline", "snapshot-1s", "snapshot-5s", "strata"]

    /// Runs `options.strategies` at every world size in `sizes`, with `min(moving, N)`
    /// entities moving, each in a fresh folder that is removed afterwards (a 1M-entity
    /// world takes a few hundred MB of disk per strategy). The baseline runs together
    /// with Strata, in one tick loop (``runTogether(_:entities:moving:seconds:options:folder:)``):
    /// their tick times are the side-by-side comparison.
    package static func sweep(_ options: BenchOptions, sizes: [Int], directory: URL, command: String,
                             progress: (String) -> Void = { _ in }) throws -> SweepResults {
        guard !sizes.isEmpty, sizes.allSatisfy({ $0 >= 1 }) else { throw BenchError("--sweep-entities needs sizes of at least 1") }
        let groups = tickedTogether(options.strategies)
        var points: [SweepPoint] = []
        for entities in sizes {
            let moving = min(options.moving, entities)
            var results: [StrategyResult] = []
            for names in groups {
                let strategies = try names.map { try makeStrategy($0, options: options) }
                let folder = directory.appendingPathComponent("\(entities)-\(names.joined(separator: "+"))")
                try? FileManager.default.removeItem(at: folder)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let seconds = runSeconds(strategies, options: options)
                progress("N=\(entities) M=\(moving) \(names.joined(separator: " with ")): \(seconds) s…")
                for result in try runTogether(strategies, entities: entities, moving: moving, seconds: seconds, options: options, folder: folder) {
                    progress(String(format: "  %@: setup %.1f s; %.1f Hz, %.0f bytes/s, p99 %.3f ms, reload %@", result.name as NSString,
                                    result.setupSeconds, result.tickRateHz, result.bytesWrittenPerSec, result.tickP99Ms,
                                    (result.reloadMs.map { String(format: "%.0f ms", $0) } ?? "-") as NSString)
                             + (result.historyBytesPerSec.map { String(format: "; history kept %.0f bytes a second", $0) } ?? ""))
                    results.append(result)
                }
            }
            let order = options.strategies
            results.sort { (order.firstIndex(of: $0.name) ?? 0) < (order.firstIndex(of: $1.name) ?? 0) }
            points.append(SweepPoint(entities: entities, moving: moving, results: results))
        }
        return SweepResults(options: options, command: command, date: ISO8601DateFormatter().string(from: Date()),
                            machine: machineDescription(), points: points)
    }
}

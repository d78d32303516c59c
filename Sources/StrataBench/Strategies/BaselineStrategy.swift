import Foundation
import Strata

/// No persistence: the same world updates, nothing written. The tick-time baseline.
///
/// A second one, the `twin`, ticks beside the baseline to measure the harness itself: it
/// does the baseline's work on a world of its own, so the gap between their tick times
/// is what the side-by-side comparison reads when there is nothing to find (an A/A run).
final class BaselineStrategy: BenchStrategy {
    let name: String
    var summary: String {
        name == "baseline" ? "no persistence: the same world updates, nothing written (the tick-time baseline)"
            : "no persistence, a second world ticked beside the baseline (the harness's own noise: an A/A comparison)"
    }
    let log = DurabilityLog()
    private let world = World()
    private var entities: [Entity] = []
    var rowsWritten: Int { 0 }

    init(name: String = "baseline") { self.name = name }

    func prepare(entities count: Int, directory: URL) throws {
        entities = (0 ..< count).map { i in
            world.spawn(BenchTransform(x: 0, y: Float(i)), BenchLabel(text: "entity \(i)", revision: 0))
        }
    }

    func tick(_ tick: BenchTick) throws {
        apply(tick, to: world, entities: entities, log: log)
    }

    func finish() throws {}
    func close() throws {}
}

import Foundation
import Strata

/// No persistence: the same world updates, nothing written. The tick-time baseline.
final class BaselineStrategy: BenchStrategy {
    let name = "baseline"
    let summary = "no persistence: the same world updates, nothing written (the tick-time baseline)"
    let log = DurabilityLog()
    private let world = World()
    private var entities: [Entity] = []
    var rowsWritten: Int { 0 }

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

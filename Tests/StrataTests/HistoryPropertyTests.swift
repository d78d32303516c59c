import Foundation
import StrataCanvas
import Testing
@testable import Strata

/// Random histories with compaction running (forced at random points, the window short):
/// the world at any time in the window is the one the last flush before it left, and a
/// rewind to it, flushed and reloaded, is that world value for value.
@Suite struct HistoryPropertyTests {
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func aRewindThenReloadEqualsTheWorldAtThatFlush(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var fixture = EngineFixture("history-property-\(seed)")
        let wall = TestWallClock()
        fixture.options.wallClock = { wall.milliseconds }
        fixture.config.history.keep = .seconds(20)
        var engine = try fixture.open()
        var entities: [Entity] = []
        var flushes: [(at: Int64, digest: WorldDigest)] = []
        for step in 0 ..< 80 {
            wall.advance(by: .milliseconds(Int64.random(in: 100 ... 1500, using: &rng)))
            for _ in 0 ..< Int.random(in: 1 ... 6, using: &rng) {
                switch Int.random(in: 0 ..< 10, using: &rng) {
                case 0 ..< 2:
                    entities.append(engine.world.spawn(Title("spawned at \(step)")))
                case 2 where !entities.isEmpty:
                    engine.world.despawn(entities.remove(at: Int.random(in: 0 ..< entities.count, using: &rng)))
                case 3 ..< 6 where !entities.isEmpty:
                    engine.world.insert(Title("set at \(step)", revision: step), for: entities.randomElement(using: &rng)!)
                case 6 ..< 8 where !entities.isEmpty:
                    engine.world.insert(Position(x: Float(step), y: .random(in: -1 ... 1, using: &rng)), for: entities.randomElement(using: &rng)!)
                case 8 where !entities.isEmpty:
                    engine.world.remove(Position.self, from: entities.randomElement(using: &rng)!)
                default:
                    break
                }
            }
            #expect(engine.flushNow())
            flushes.append((wall.milliseconds, engine.world.digest()))
            if Int.random(in: 0 ..< 8, using: &rng) == 0 { #expect(engine.compactNow(), "seed \(seed)") }
        }
        #expect(engine.compactNow())
        let window = try engine.history()
        #expect(window.startMilliseconds > flushes[0].at, "seed \(seed): compaction moved the window's start")
        func expected(at time: Int64) -> WorldDigest? { flushes.last { $0.at <= time }?.digest }

        let times = flushes.map(\.at).filter { $0 >= window.startMilliseconds }
        #expect(times.count >= 10, "seed \(seed): the window holds the last 20 s")
        for time in times {
            let probe = min(time + Int64.random(in: 0 ... 50, using: &rng), wall.milliseconds)
            #expect(try engine.world(at: Date(timeIntervalSince1970: Double(probe) / 1000)).digest() == expected(at: probe),
                    "seed \(seed): the world at \(probe - flushes[0].at) ms")
        }

        let target = times[Int.random(in: 0 ..< times.count / 2, using: &rng)]
        wall.advance(by: .seconds(1))
        try engine.rewind(to: Date(timeIntervalSince1970: Double(target) / 1000))
        #expect(engine.world.digest() == expected(at: target), "seed \(seed)")
        #expect(engine.flushNow())
        try engine.shutdown()
        engine = try fixture.open()
        #expect(engine.world.digest() == expected(at: target), "seed \(seed): reloaded after the rewind")
        try engine.shutdown()
    }
}

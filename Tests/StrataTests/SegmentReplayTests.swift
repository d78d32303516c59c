import Foundation
import GRDB
import StrataCanvas
import Testing
@testable import Strata

/// Random spawns, inserts, mutations, removals, despawns and respawns of old ids over
/// many flushes, compactions (automatic with tiny caps, and explicit) and restarts; after
/// every restart the reloaded world must equal the one the operations made.
@Suite struct SegmentReplayTests {
    struct Scenario {
        var rng: SplitMix64
        var expected: [EntityID: ExpectedEntity] = [:]
        var handles: [EntityID: Entity] = [:]
        var despawned: [EntityID] = []

        mutating func randomLive() -> (EntityID, Entity)? {
            guard !expected.isEmpty else { return nil }
            let id = expected.keys.sorted { $0.description < $1.description }[Int.random(in: 0 ..< expected.count, using: &rng)]
            return (id, handles[id]!)
        }

        mutating func position() -> Position { Position(x: Float(Int.random(in: 0 ..< 1000, using: &rng)), y: Float(Int.random(in: 0 ..< 9, using: &rng))) }
        mutating func tags() -> Tags { Tags((0 ..< Int.random(in: 0 ..< 40, using: &rng)).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }) }

        /// One random operation on the world, mirrored in `expected`.
        mutating func operate(on world: World) {
            let roll = Double.random(in: 0 ..< 1, using: &rng)
            switch roll {
            case ..<0.2:
                let reuse = !despawned.isEmpty && rng.chance(0.3)
                let id = reuse ? despawned.remove(at: Int.random(in: 0 ..< despawned.count, using: &rng)) : EntityID()
                let entity = world.spawn(id: id)
                var state = ExpectedEntity()
                if rng.chance(0.8) { state.position = position(); world.insert(state.position!, for: entity) }
                if rng.chance(0.5) { state.title = Title("t\(Int.random(in: 0 ..< 100, using: &rng))"); world.insert(state.title!, for: entity) }
                if rng.chance(0.4) { state.tags = tags(); world.insert(state.tags!, for: entity) }
                world.insert(Cursor(x: 1), for: entity)   // ephemeral: never persisted
                expected[id] = state
                handles[id] = entity
            case ..<0.55:
                guard let (id, entity) = randomLive() else { return }
                let value = position()
                world.insert(value, for: entity)
                expected[id]!.position = value
            case ..<0.65:
                guard let (id, entity) = randomLive() else { return }
                let value = Title("t\(Int.random(in: 0 ..< 100, using: &rng))", revision: Int.random(in: 0 ..< 5, using: &rng))
                world.insert(value, for: entity)
                expected[id]!.title = value
            case ..<0.75:
                guard let (id, entity) = randomLive() else { return }
                let value = tags()
                world.insert(value, for: entity)
                expected[id]!.tags = value
            case ..<0.88:
                guard let (id, entity) = randomLive() else { return }
                switch Int.random(in: 0 ..< 3, using: &rng) {
                case 0: world.remove(Position.self, from: entity); expected[id]!.position = nil
                case 1: world.remove(Title.self, from: entity); expected[id]!.title = nil
                default: world.remove(Tags.self, from: entity); expected[id]!.tags = nil
                }
            default:
                guard let (id, entity) = randomLive() else { return }
                world.despawn(entity)
                expected[id] = nil
                handles[id] = nil
                despawned.append(id)
            }
        }
    }

    @Test(arguments: 0 ..< 12)
    func replayEqualsState(seed: Int) throws {
        var fixture = EngineFixture("replay\(seed)")
        // Tiny caps: the writer compacts on its own, between batches, all the time.
        fixture.config.compaction.idleBacklogBytes = 1024
        fixture.config.compaction.backlogBytes = 2 * 1024
        fixture.config.compaction.maxBacklogBytes = 16 * 1024
        fixture.config.compaction.stepBudget = .milliseconds(1)
        fixture.options.compactionMethod = [nil, .merge, .fold][seed % 3]
        fixture.options.compactionStepBytes = 256   // rounds of several steps, batches between them
        var scenario = Scenario(rng: SplitMix64(seed: UInt64(seed) &* 0x9E37_79B9 &+ 1))
        var engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        var restarts = 0
        for op in 1 ... 600 {
            scenario.operate(on: engine.world)
            fixture.clock.advance(by: .milliseconds(100))
            engine.endTick()
            // A restart at op 300 whatever the draws, and more where they fall.
            switch op == 300 ? 2 : Int.random(in: 0 ..< 60, using: &scenario.rng) {
            case 0: engine.flushNow()
            case 1: #expect(engine.compactNow(), "seed \(seed), op \(op): compactNow failed")
            case 2 where op > 100:
                try engine.shutdown()
                engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
                restarts += 1
                try #require(snapshot(engine.world) == scenario.expected, "seed \(seed): the reload after op \(op) differs")
                for entity in engine.world.entities { scenario.handles[engine.world.id(of: entity)!] = entity }
            default: break
            }
        }
        try engine.shutdown()
        engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        #expect(snapshot(engine.world) == scenario.expected, "seed \(seed): the final reload differs")
        #expect(engine.recovery.loaded.components == scenario.expected.values.reduce(0) {
            $0 + ($1.position == nil ? 0 : 1) + ($1.title == nil ? 0 : 1) + ($1.tags == nil ? 0 : 1)
        })
        try engine.shutdown()
        // What `strata inspect` counts is what a reload gives.
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.components[Position.typeName, default: 0] == scenario.expected.values.filter { $0.position != nil }.count)
        #expect(inspection.components[Tags.typeName, default: 0] == scenario.expected.values.filter { $0.tags != nil }.count)
        #expect(inspection.entityCount == scenario.expected.count)
        #expect(inspection.compactions > 2, "seed \(seed): the scenario hardly compacted")
        #expect(inspection.compactionSteps > inspection.compactions, "seed \(seed): no round took several steps")
        #expect(restarts > 0, "seed \(seed): the scenario never restarted")
    }

    /// The newest entity despawned, then a restart: its records are still in the log, so
    /// its number must not go to the next spawn (which would inherit them on reload).
    @Test func theNumberOfADespawnedEntityIsNotReusedWhileRecordsNameIt() throws {
        let fixture = EngineFixture()
        do {
            let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
            engine.world.spawn(Title("kept"))
            let newest = engine.world.spawn(Position(x: 1, y: 1), Tags([1, 2, 3]))
            engine.flushNow()
            engine.world.despawn(newest)
            try engine.shutdown()
        }
        do {
            let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
            engine.world.spawn(Title("new"))   // no Position, no Tags
            try engine.shutdown()
        }
        let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        let new = try #require(engine.world.entities(with: Title.self).first { $0.value.text == "new" }?.entity)
        #expect(ExpectedEntity(engine.world, new) == ExpectedEntity(title: Title("new")), "the new entity inherited a dead one's records")
        try engine.shutdown()
    }

    /// Compaction interrupted after any step, or inside one (a step's transaction rolled
    /// back, as a crash would leave it): the reload gives the same world every time.
    @Test(arguments: CompactionPolicy.Method.allCases)
    func compactionInterruptedAtEveryStepLosesAndDuplicatesNothing(method: CompactionPolicy.Method) throws {
        let fixture = EngineFixture("interrupted\(method)")
        var scenario = Scenario(rng: SplitMix64(seed: 42))
        do {
            let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
            for _ in 0 ..< 24 {
                for _ in 0 ..< 25 { scenario.operate(on: engine.world) }
                engine.flushNow()   // one segment row (or more) per round
            }
            try engine.shutdown()
        }
        let original = fixture.directory.databasePath
        let before = try PersistedComponents.read(original)
        #expect(before.entities.count == scenario.expected.count)

        var k = 0
        while true {
            let copy = fixture.directory.url.appendingPathComponent("step\(k).db").path
            try FileManager.default.copyItem(atPath: original, toPath: copy)
            let store = try Store(location: StoreLocation(path: copy))
            let endID = try store.withConnection { try Int64.fetchOne($0, sql: "SELECT max(id) FROM segments") } ?? 0
            var round = Compactor.Round(method: method, endID: endID)
            var done = false
            try store.withConnection { db in
                for _ in 0 ..< k where !done {
                    try db.inTransaction {
                        done = try Compactor.step(round, budgetBytes: 1, db).roundDone
                        return .commit
                    }
                    round.steps += 1
                }
                // The next step, cut short by a crash: its transaction never commits.
                try db.inTransaction {
                    _ = try Compactor.step(round, budgetBytes: 1, db)
                    return .rollback
                }
            }
            try store.close()
            #expect(try PersistedComponents.read(copy) == before, "\(method): after \(k) steps the file reads differently")
            var config = fixture.config
            config.database.path = copy
            let engine = try Engine.open(config: config, components: replayComponents, logger: quietLogger, options: fixture.options)
            #expect(snapshot(engine.world) == scenario.expected, "\(method): after \(k) steps the reload differs")
            try engine.shutdown()
            if done { break }
            k += 1
        }
        #expect(k > 10, "the log should take many one-row steps")
        let compacted = try DatabaseInspection.inspect(path: fixture.directory.url.appendingPathComponent("step\(k).db").path)
        #expect(compacted.compactions == 1)
        if method == .fold { #expect(compacted.segments == 0) } else { #expect(compacted.segments >= 1) }
    }
}

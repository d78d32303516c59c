import Foundation
import Testing
@testable import Strata
import StrataTesting

/// The world digest: the same entities with the same values give the same digest, in any
/// order; a changed bit changes it; a file's digest is its world's.
@Suite struct WorldDigestTests {
    let ids = (0 ..< 4).map { _ in EntityID() }

    /// A world of `ids`, spawned in `order`, entity i at x = `xs[i]`.
    func world(order: [Int], xs: [Float] = [1, 2, 3, 4]) -> World {
        let world = World(clock: ManualClock())
        for type in testComponents + [SharedPosition.self] { world.register(any: type) }
        for i in order {
            let entity = world.spawn(id: ids[i])
            world.insert(SharedPosition(x: xs[i], y: 0), for: entity)
            if i.isMultiple(of: 2) { world.insert(Title("entity \(i)"), for: entity) }
            world.insert(Cursor(x: 9), for: entity)   // ephemeral: never in the digest
        }
        return world
    }

    @Test func theOrderOfEntitiesDoesNotMatterButEveryBitDoes() {
        let a = world(order: [0, 1, 2, 3]).digest()
        let b = world(order: [3, 1, 0, 2]).digest()
        #expect(a == b)
        #expect(Set(a.types.keys) == ["test.shared_position", "test.title"], "ephemeral types are not in it")
        let negativeZero = world(order: [0, 1, 2, 3], xs: [1, 2, 3, -0.0]).digest()
        let zero = world(order: [0, 1, 2, 3], xs: [1, 2, 3, 0.0]).digest()
        #expect(negativeZero.types["test.shared_position"] != zero.types["test.shared_position"], "−0.0 is not 0.0")
        #expect(negativeZero.types["test.title"] == zero.types["test.title"], "the other types keep theirs")
        let nan = world(order: [0, 1, 2, 3], xs: [1, 2, 3, Float(nan: 1, signaling: false)]).digest()
        let otherNaN = world(order: [0, 1, 2, 3], xs: [1, 2, 3, Float(nan: 2, signaling: false)]).digest()
        #expect(nan.replicated != otherNaN.replicated, "NaN payloads count bit for bit")
    }

    @Test func replicatedCoversOnlyTheReplicatedTypes() {
        let world = world(order: [0, 1, 2, 3])
        let before = world.digest()
        world.insert(Title("changed"), for: world.entity(for: ids[0])!)
        let after = world.digest()
        #expect(after.types["test.title"] != before.types["test.title"])
        #expect(after.replicated == before.replicated, "Title is local")
        world.insert(SharedPosition(x: 5, y: 5), for: world.entity(for: ids[1])!)
        #expect(world.digest().replicated != after.replicated)
    }

    @Test func aFilesDigestIsItsWorlds() throws {
        let fixture = EngineFixture()
        let engine = try Engine.open(config: fixture.config, components: testComponents + [SharedPosition.self],
                                     logger: quietLogger, options: fixture.options)
        for i in 0 ..< 50 {
            let entity = engine.world.spawn(SharedPosition(x: Float(i), y: -0.0))
            if i.isMultiple(of: 3) { engine.world.insert(Title("t\(i)"), for: entity) }
        }
        #expect(engine.flushNow(reason: .majorAction))
        let path = fixture.directory.databasePath
        #expect(try DatabaseInspection.inspect(path: path).digest == engine.world.digest(), "base rows and the segment log")
        for entity in engine.world.entities.prefix(10) { engine.world.insert(SharedPosition(x: 99, y: 1), for: entity) }
        engine.world.despawn(engine.world.entities.last!)
        #expect(engine.flushNow(reason: .majorAction))
        #expect(try DatabaseInspection.inspect(path: path).digest == engine.world.digest(), "changes in the log")
        #expect(engine.compactNow())
        let world = engine.world.digest()
        #expect(try DatabaseInspection.inspect(path: path).digest == world, "folded into base rows")
        try engine.shutdown()
        let inspected = try #require(try DatabaseInspection.inspect(path: path).digest)
        #expect(inspected == world)
        #expect(inspected.replicated != WorldDigest.Accumulator().digest(replicated: []).replicated, "the file records the replicated type")
        #expect(try DatabaseInspection.inspect(path: path).json().contains("\"replicated\""))
    }

    /// Floats reach the file and come back bit for bit: NaN payloads, −0.0, subnormals.
    @Test func specialFloatsSurviveAReloadBitForBit() throws {
        let fixture = EngineFixture()
        let open = { try Engine.open(config: fixture.config, components: testComponents + [SharedPosition.self],
                                     logger: quietLogger, options: fixture.options) }
        let specials: [Float] = [Float(nan: 0x1234, signaling: false), Float(nan: 7, signaling: true), -0.0, 0.0,
                                 .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .infinity, -.infinity]
        let engine = try open()
        var ids: [EntityID] = []
        for (i, x) in specials.enumerated() {
            let entity = engine.world.spawn(SharedPosition(x: x, y: specials[(i + 1) % specials.count]))
            ids.append(try #require(engine.world.id(of: entity)))
        }
        #expect(engine.flushNow(reason: .majorAction))
        let before = engine.world.digest()
        try engine.shutdown()

        let reopened = try open()
        defer { try? reopened.shutdown() }
        #expect(reopened.world.digest() == before)
        for (i, id) in ids.enumerated() {
            let entity = try #require(reopened.world.entity(for: id))
            let value = try #require(reopened.world.get(SharedPosition.self, for: entity))
            #expect(value.x.bitPattern == specials[i].bitPattern, "entity \(i): \(value.x) came back as other bits")
        }
    }
}

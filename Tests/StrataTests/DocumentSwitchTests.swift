import Foundation
import Testing
@testable import Strata

/// Switching documents in one process: each keeps its own world, log, settings and marks.
@Suite struct DocumentSwitchTests {
    /// What a document should hold: titles by entity id, positions, operations, a setting.
    struct Model {
        var titles: [EntityID: String] = [:]
        var positions: [EntityID: Position] = [:]
        var operations: Int64 = 0
        var lastRound: Int64?
    }

    @Test func aHundredSwitchesUnderLoadLoseNothingInEitherDocument() throws {
        let fixture = EngineFixture()
        let paths = [fixture.directory.databasePath, fixture.directory.url.appendingPathComponent("other.db").path]
        var models = [Model(), Model()]
        var engine = try fixture.open()
        var current = 0
        for round in 1 ... 100 {
            let world = engine.world
            for i in 0 ..< 3 {
                let title = "r\(round)-\(i)"
                let position = Position(x: Float(round), y: Float(i))
                let entity = world.spawn(position, Title(title))
                let id = world.id(of: entity)!
                models[current].titles[id] = title
                models[current].positions[id] = position
            }
            if let (id, _) = models[current].positions.first, let entity = world.entity(for: id) {
                world.mutate(Position.self, of: entity) { $0.x += 1000 }   // derived: due later, saved by the switch
                models[current].positions[id]!.x += 1000
            }
            engine.appendOperation(kind: "round", payload: [UInt8(truncatingIfNeeded: round)])
            models[current].operations += 1
            world.setSetting(.integer(Int64(round)), for: "last_round")
            models[current].lastRound = Int64(round)
            for _ in 0 ..< 3 {   // some ticks: some critical flushes happen on their own
                fixture.clock.advance(by: .milliseconds(400))
                engine.endTick()
            }
            current = 1 - current
            engine = try engine.switchDocument(to: paths[current])
            #expect(engine.store.location.path == paths[current])
            #expect(!engine.recovery.crashed, "round \(round): the switch closed the other document cleanly")
        }
        try engine.shutdown()

        for (index, path) in paths.enumerated() {
            var config = fixture.config
            config.database.path = path
            let reopened = try Engine.open(config: config, components: testComponents, logger: quietLogger, options: fixture.options)
            let world = reopened.world
            let model = models[index]
            #expect(world.entityCount == model.titles.count)
            for (id, title) in model.titles {
                let entity = try #require(world.entity(for: id), "document \(index): entity \(title) lost")
                #expect(world.get(Title.self, for: entity)?.text == title)
                #expect(world.get(Position.self, for: entity) == model.positions[id])
            }
            #expect(reopened.vectorClock[reopened.nodeID] == model.operations)
            #expect(world.setting("last_round") == model.lastRound.map(SettingValue.integer))
            #expect(reopened.recovery.session.crashCount == 0)
            #expect(reopened.recovery.session.cleanShutdownCount == (index == 0 ? 51 : 50), "every switch marked the document it left clean")
            try reopened.shutdown()
        }
        #expect(models[0].titles.count == 150 && models[1].titles.count == 150)
    }

    @Test func aSwitchToADocumentThatCannotOpenKeepsTheCurrentOne() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let kept = engine.world.spawn(Title("kept"))
        #expect(throws: StoreError.self) { _ = try engine.switchDocument(to: fixture.directory.databasePath) }   // itself: owned
        #expect(engine.world.isAlive(kept))
        engine.world.spawn(Title("after"))
        try engine.shutdown()
        let reopened = try fixture.open()
        #expect(reopened.world.entityCount == 2)
        #expect(!reopened.recovery.crashed)
        try reopened.shutdown()
    }
}

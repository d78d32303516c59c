import Foundation
import Testing
@testable import Strata

@Suite struct EngineTests {
    @Test func spawnIsPersistedAndReloadedAfterCleanShutdown() throws {
        let fixture = EngineFixture()
        var id: EntityID?
        do {
            let engine = try fixture.open()
            #expect(engine.recovery.session.previous == .none)
            let e = engine.world.spawn(Position(x: 1, y: 2), Title("doc"), Cursor(x: 3))
            id = engine.world.id(of: e)
            try engine.shutdown()
        }
        #expect(try fixture.entityCount() == 1)
        #expect(try fixture.componentCount(Position.self) == 1)
        #expect(try fixture.componentCount(Cursor.self) == 0)

        let engine = try fixture.open()
        #expect(engine.recovery.session.previous == .clean)
        let e = try #require(engine.world.entity(for: id!))
        #expect(engine.world.get(Position.self, for: e) == Position(x: 1, y: 2))
        #expect(engine.world.get(Title.self, for: e) == Title("doc"))
        #expect(engine.world.get(Cursor.self, for: e) == nil)
        try engine.shutdown()
    }
}

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

    /// A reload reads its base rows on a thread of its own, a run at a time, and decodes
    /// them here: many runs, more than wait at once, come back whole and in their places.
    @Test func aReloadOfManyRunsOfBaseRowsLoadsEveryValue() throws {
        let fixture = EngineFixture()
        // A bulk first save (its new entities' rows are base rows), past the runs in flight.
        let count = max(WriteBatch.bulkRows / 2, 3 * ReloadReader.rowsPerRun * ReloadReader.inFlight / 2)
        var ids: [EntityID] = []
        do {
            let engine = try fixture.open()
            for i in 0 ..< count {
                let e = engine.world.spawn(Position(x: Float(i), y: -Float(i)), Title("shape \(i)"))
                ids.append(try #require(engine.world.id(of: e)))
            }
            try engine.shutdown()
        }
        #expect(try fixture.componentCount(Position.self) == count)
        let engine = try fixture.open()
        #expect(engine.recovery.loaded.entities == count)
        #expect(engine.recovery.loaded.segmentRecords == 0, "every value from a base row")
        for (i, id) in ids.enumerated() {
            let e = try #require(engine.world.entity(for: id))
            #expect(engine.world.get(Position.self, for: e) == Position(x: Float(i), y: -Float(i)))
            #expect(engine.world.get(Title.self, for: e) == Title("shape \(i)"))
        }
        try engine.shutdown()
    }
}

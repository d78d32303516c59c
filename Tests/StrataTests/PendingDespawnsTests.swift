import Foundation
import GRDB
import Testing
@testable import Strata

/// A despawn records its entity's number and leaves the rows to compaction
/// (`PendingDespawns`): every reader leaves the entity out meanwhile, what it owns that must
/// not outlive it goes at once, and compaction deletes the rows.
@Suite struct PendingDespawnsTests {
    @Test func aDespawnWaitsForCompactionAndNoReaderSeesTheEntity() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let kept = engine.world.spawn(Position(x: 1, y: 2), Title("kept"))
        let gone = engine.world.spawn(Position(x: 3, y: 4), Title("gone"))
        let keptID = engine.world.id(of: kept)!, goneID = engine.world.id(of: gone)!
        #expect(engine.flushNow())
        #expect(engine.compactNow(), "the two entities' components are base rows")
        engine.world.despawn(gone)
        engine.world.mutate(Position.self, of: kept) { $0.x = 10 }
        #expect(engine.flushNow())

        // The rows are still there, named as pending; no reader counts them.
        #expect(try fixture.count("SELECT count(*) FROM entities") == 2)
        #expect(try fixture.count("SELECT count(*) FROM pending_despawns") == 1)
        #expect(try fixture.entityCount() == 1)
        var inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.entityCount == 1)
        #expect(inspection.components == ["test.position": 1, "test.title": 1])
        #expect(inspection.digest == engine.world.digest())
        try engine.shutdown()

        // A reload leaves it out, reports nothing odd, and never reuses its number.
        engine = try fixture.open()
        #expect(engine.world.entity(for: goneID) == nil)
        #expect(engine.world.get(Position.self, for: engine.world.entity(for: keptID)!) == Position(x: 10, y: 2))
        #expect(engine.recovery.loaded.orphanRows == 0 && engine.recovery.loaded.malformedEntityRows == 0)
        let goneNumber = try fixture.count("SELECT num FROM pending_despawns")
        #expect(engine.world.nextEntityNumber > goneNumber)

        // Compaction deletes its rows (the base rows with them) and forgets it.
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 1)
        #expect(try fixture.count("SELECT count(*) FROM pending_despawns") == 0)
        #expect(try fixture.count("SELECT count(*) FROM components WHERE entity_num = ?", [goneNumber]) == 0)
        inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.digest == engine.world.digest())
        try engine.shutdown()
    }

    @Test func aDespawnedEntitysJobsGoAtOnceAndNoJobCanBeAddedForIt() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let entity = engine.world.spawn(Title("with a job"))
        let id = engine.world.id(of: entity)!
        #expect(engine.flushNow())
        _ = try engine.jobs.enqueue("render", for: id)
        engine.world.despawn(entity)
        #expect(engine.flushNow())
        #expect(try engine.jobs.jobs().isEmpty)
        #expect(throws: (any Error).self) { try engine.jobs.enqueue("render", for: id, timeout: .milliseconds(50)) }
        // No file can be registered for it either (no row: the lookup waits, then gives up).
        #expect(throws: (any Error).self) {
            try engine.jobs.perform(.normal) { db in
                try AssetRows.register(db, name: "late.bin", entity: id, size: 1, checksum: 0, now: 0)
            }
        }
    }

    @Test func anIdSpawnedAgainWhileItsDespawnWaitsTakesItsPlace() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let id = EntityID()
        let first = engine.world.spawn(id: id)
        engine.world.insert(Title("first"), for: first)
        engine.world.insert(Position(x: 1, y: 1), for: first)
        #expect(engine.flushNow())
        engine.world.despawn(first)
        #expect(engine.flushNow())
        let second = engine.world.spawn(id: id)
        engine.world.insert(Title("second"), for: second)
        #expect(engine.flushNow())
        #expect(engine.recovery.loaded.orphanRows == 0)
        #expect(engine.metrics.rejectedRows == 0)
        try engine.shutdown()

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        let again = try #require(engine.world.entity(for: id))
        #expect(engine.world.get(Title.self, for: again) == Title("second"))
        #expect(engine.world.get(Position.self, for: again) == nil, "the first entity's components went with it")
        #expect(try fixture.count("SELECT count(*) FROM pending_despawns") == 0)
    }

    /// More despawns than one step applies: the round goes on until every one is applied,
    /// whether or not the log has rows to consume.
    @Test(arguments: [false, true]) func compactNowAppliesEveryWaitingDespawnStepByStep(withRecords: Bool) throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let count = Compactor.pendingDespawnsPerStep * 2 + 10
        let entities = (0 ..< count).map { engine.world.spawn(Title("t\($0)")) }
        #expect(engine.flushNow())
        #expect(engine.compactNow())
        for entity in entities { engine.world.despawn(entity) }
        if withRecords { engine.world.spawn(Title("a record in the log")) }
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_despawns") == count)
        let steps = engine.metrics.compactionSteps
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_despawns") == 0)
        #expect(try fixture.count("SELECT count(*) FROM entities") == (withRecords ? 1 : 0))
        #expect(engine.metrics.compactionSteps - steps >= 3, "a bounded number a step")
    }

    /// Idle, the writer applies the waiting despawns by itself, in a round that consumes no
    /// segment: the log stays as it is.
    @Test func idleTheWriterAppliesTheWaitingDespawnsAndLeavesTheLogAlone() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let entities = (0 ..< 20).map { engine.world.spawn(Title("t\($0)")) }
        #expect(engine.flushNow())
        for entity in entities.prefix(5) { engine.world.despawn(entity) }
        #expect(engine.flushNow())
        let segments = try fixture.count("SELECT count(*) FROM segments")
        #expect(try fixture.count("SELECT count(*) FROM pending_despawns") == 5)
        engine.noteInput()   // idle detection starts with the host's first input
        fixture.clock.advance(by: fixture.config.persistence.idleAfter + .seconds(1))
        engine.endTick()
        #expect(eventually { (try? fixture.count("SELECT count(*) FROM pending_despawns")) == 0 })
        #expect(try fixture.count("SELECT count(*) FROM entities") == 15)
        #expect(try fixture.count("SELECT count(*) FROM segments") == segments, "no segment was consumed")
    }

    /// A document that keeps history despawns at once: its window copies the rows as they go.
    @Test func withHistoryADespawnDeletesTheRowsAtOnce() throws {
        var fixture = EngineFixture()
        fixture.config.history.keep = .seconds(3600)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let entity = engine.world.spawn(Title("a"))
        #expect(engine.flushNow())
        engine.world.despawn(entity)
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 0)
        #expect(try fixture.count("SELECT count(*) FROM pending_despawns") == 0)
    }
}

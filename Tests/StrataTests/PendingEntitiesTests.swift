import Foundation
import GRDB
import Testing
@testable import Strata

/// A spawn of a few entities and a despawn record the entity in `pending_entities` and leave
/// its rows to compaction (`PendingEntities`): every reader sees the world as if the rows
/// were written (a waiting spawn counts, a waiting despawn does not), what a despawned
/// entity owns that must not outlive it goes at once, and compaction writes the rows.
@Suite struct PendingEntitiesTests {
    static let waitingDespawns = "SELECT count(*) FROM pending_entities WHERE id IS NULL"
    static let waitingSpawns = "SELECT count(*) FROM pending_entities WHERE id IS NOT NULL"

    @Test func aDespawnWaitsForCompactionAndNoReaderSeesTheEntity() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let kept = engine.world.spawn(Position(x: 1, y: 2), Title("kept"))
        let gone = engine.world.spawn(Position(x: 3, y: 4), Title("gone"))
        let keptID = engine.world.id(of: kept)!, goneID = engine.world.id(of: gone)!
        #expect(engine.flushNow())
        #expect(try fixture.count(Self.waitingSpawns) == 2)
        #expect(engine.compactNow(), "the two entities are rows, their components base rows")
        #expect(try fixture.count(Self.waitingSpawns) == 0)
        engine.world.despawn(gone)
        engine.world.mutate(Position.self, of: kept) { $0.x = 10 }
        #expect(engine.flushNow())

        // The rows are still there, named as pending; no reader counts them.
        #expect(try fixture.count("SELECT count(*) FROM entities") == 2)
        #expect(try fixture.count(Self.waitingDespawns) == 1)
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
        let goneNumber = try fixture.count("SELECT num FROM pending_entities WHERE id IS NULL")
        #expect(engine.world.nextEntityNumber > goneNumber)

        // Compaction deletes its rows (the base rows with them) and forgets it.
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 1)
        #expect(try fixture.count(Self.waitingDespawns) == 0)
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
        #expect(try fixture.count("SELECT count(*) FROM entities") == 1, "the job's entity is a row")
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
        #expect(engine.compactNow(), "the first entity is a row")
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
        // Compaction applies the despawn before the spawn takes the id's row.
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 0)
        #expect(try fixture.count("SELECT count(*) FROM entities WHERE id = ?", [id.withBytes { Data($0) }]) == 1)
        #expect(try fixture.count("SELECT count(*) FROM components") == 1)
    }

    /// The same with the second spawn in a commit of many (its row written at once): the
    /// waiting despawn that holds the id is applied in that commit.
    @Test func anIdSpawnedAgainInALargeCommitTakesItsPlaceAtOnce() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let id = EntityID()
        engine.world.insert(Title("first"), for: engine.world.spawn(id: id))
        #expect(engine.flushNow())
        #expect(engine.compactNow())
        engine.world.despawn(engine.world.entity(for: id)!)
        #expect(engine.flushNow())
        engine.world.insert(Title("second"), for: engine.world.spawn(id: id))
        for i in 0 ..< EntityRowsPart.waitingSpawnsPerCommit { engine.world.spawn(Title("t\(i)")) }
        #expect(engine.flushNow())
        #expect(engine.metrics.rejectedRows == 0)
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 0)
        #expect(try fixture.entityCount() == EntityRowsPart.waitingSpawnsPerCommit + 1)
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
        // In commits of a few despawns each (a commit of many deletes its rows at once).
        for chunk in stride(from: 0, to: count, by: EntityRowsPart.waitingDespawnsPerCommit) {
            for entity in entities[chunk ..< min(count, chunk + EntityRowsPart.waitingDespawnsPerCommit)] { engine.world.despawn(entity) }
            #expect(engine.flushNow())
        }
        if withRecords { engine.world.spawn(Title("a record in the log")) }
        #expect(engine.flushNow())
        #expect(try fixture.count(Self.waitingDespawns) == count)
        let steps = engine.metrics.compactionSteps
        #expect(engine.compactNow())
        #expect(try fixture.count(Self.waitingDespawns) == 0)
        #expect(try fixture.count("SELECT count(*) FROM entities") == (withRecords ? 1 : 0))
        #expect(engine.metrics.compactionSteps - steps >= 3, "a bounded number a step")
    }

    /// Idle, the writer applies the waiting spawns and despawns by itself, in a round that
    /// consumes no segment: the log stays as it is.
    @Test func idleTheWriterAppliesTheWaitingEntitiesAndLeavesTheLogAlone() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let entities = (0 ..< 20).map { engine.world.spawn(Title("t\($0)")) }
        #expect(engine.flushNow())
        for entity in entities.prefix(5) { engine.world.despawn(entity) }
        #expect(engine.flushNow())
        let segments = try fixture.count("SELECT count(*) FROM segments")
        #expect(try fixture.count(Self.waitingDespawns) == 5)
        engine.noteInput()   // idle detection starts with the host's first input
        fixture.clock.advance(by: fixture.config.persistence.idleAfter + .seconds(1))
        engine.endTick()
        #expect(eventually { (try? fixture.count(Self.waitingDespawns)) == 0 })
        #expect(try fixture.count("SELECT count(*) FROM entities") == 15, "the waiting spawns are rows too")
        #expect(try fixture.count(Self.waitingSpawns) == 0)
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
        #expect(try fixture.count(Self.waitingDespawns) == 0)
    }

    // MARK: Spawns

    /// A few spawns wait; the reload, `strata inspect`, the digest and the history see them
    /// as entities; compaction writes their rows, and the world reads the same after it.
    @Test func aWaitingSpawnIsAnEntityToEveryReader() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let ids = (0 ..< 3).map { i in engine.world.id(of: engine.world.spawn(Position(x: Float(i), y: 0), Title("s\(i)")))! }
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 0)
        #expect(try fixture.count(Self.waitingSpawns) == 3)
        #expect(try fixture.entityCount() == 3)
        var inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.entityCount == 3)
        #expect(inspection.components == ["test.position": 3, "test.title": 3])
        #expect(inspection.digest == engine.world.digest())
        let digest = engine.world.digest()
        let next = engine.world.nextEntityNumber
        try engine.shutdown()

        engine = try fixture.open()
        #expect(engine.world.digest() == digest)
        #expect(engine.world.nextEntityNumber == next, "numbers are never reused")
        #expect(engine.recovery.loaded.orphanRows == 0 && engine.recovery.loaded.malformedEntityRows == 0)
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 3)
        #expect(try fixture.count(Self.waitingSpawns) == 0)
        #expect(try fixture.count("SELECT count(*) FROM components") == 6, "folded into base rows")
        inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.digest == digest)
        try engine.shutdown()

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.digest() == digest)
        for (i, id) in ids.enumerated() {
            #expect(engine.world.get(Title.self, for: try #require(engine.world.entity(for: id))) == Title("s\(i)"))
        }
    }

    /// Despawned before compaction: the spawn's row becomes a waiting despawn, and neither
    /// ever reaches `entities`; nothing is reported as an orphan.
    @Test func aSpawnDespawnedWhileItWaitsNeverBecomesARow() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let kept = engine.world.spawn(Title("kept"))
        let brief = engine.world.spawn(Title("brief"))
        let briefID = engine.world.id(of: brief)!
        #expect(engine.flushNow())
        engine.world.despawn(brief)
        #expect(engine.flushNow())
        #expect(try fixture.count(Self.waitingSpawns) == 2, "its row stays: the despawn's is appended beside it")
        #expect(try fixture.count(Self.waitingDespawns) == 1)
        #expect(try fixture.entityCount() == 1)
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).entityCount == 1)
        #expect(throws: (any Error).self, "no job for it") { try engine.jobs.enqueue("render", for: briefID, timeout: .milliseconds(50)) }
        try engine.shutdown()

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.entity(for: briefID) == nil)
        #expect(engine.recovery.loaded.orphanRows == 0)
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 0)
        #expect(try fixture.count("SELECT count(*) FROM entities") == 1)
        #expect(try fixture.count("SELECT count(*) FROM components") == 1, "the brief entity's records went with it")
        _ = kept
    }

    /// A job or a file for a waiting spawn moves it into `entities` (their rows refer to it).
    @Test func aJobOrAFileForAWaitingSpawnMakesItARow() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let withJob = engine.world.id(of: engine.world.spawn(Title("job")))!
        let withFile = engine.world.id(of: engine.world.spawn(Title("file")))!
        #expect(engine.flushNow())
        #expect(try fixture.count(Self.waitingSpawns) == 2)
        let job = try engine.jobs.enqueue("render", for: withJob)
        #expect(job.entity == withJob)
        #expect(try fixture.count(Self.waitingSpawns) == 1)
        try engine.assets.write([1, 2, 3], for: withFile, name: "file.bin")
        #expect(try fixture.count(Self.waitingSpawns) == 0)
        #expect(try fixture.count("SELECT count(*) FROM entities") == 2)
        #expect(try engine.assets.assets().map(\.entity) == [withFile])
    }

    /// A commit of many spawns writes their rows at once, sorted: they fill pages of their
    /// own, and the waiting table stays small.
    @Test func aCommitOfManySpawnsWritesTheirRowsAtOnce() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let count = EntityRowsPart.waitingSpawnsPerCommit + 1
        for i in 0 ..< count { engine.world.spawn(Title("t\(i)")) }
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == count)
        #expect(try fixture.count(Self.waitingSpawns) == 0)
    }

    /// Spawns left waiting by a session without history, despawned by one with it: they are
    /// rows first, and the window keeps them.
    @Test func historyTurnedOnWritesTheSpawnsLeftWaiting() throws {
        var fixture = EngineFixture()
        var engine = try fixture.open()
        let entity = engine.world.spawn(Title("waiting"))
        let id = engine.world.id(of: entity)!
        #expect(engine.flushNow())
        try engine.shutdown()
        #expect(try fixture.count(Self.waitingSpawns) == 1)

        fixture.config.history.keep = .seconds(3600)
        engine = try fixture.open()
        defer { try? engine.shutdown() }
        engine.world.despawn(try #require(engine.world.entity(for: id)))
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 0)
        #expect(try fixture.count("SELECT count(*) FROM entities") == 0)
        #expect(try fixture.count("SELECT count(*) FROM despawned_entities") == 1)
    }

    /// A schema-15 document's waiting despawns (their own table then) wait on in the
    /// table of schema 16, and its entities load as before.
    @Test func aSchema15DocumentsWaitingDespawnsMigrate() throws {
        let fixture = EngineFixture()
        let (kept, gone) = (EntityID(), EntityID())
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try Store.migrator.migrate(queue, upTo: "v15: despawns wait for compaction in a small table of their own")
        try queue.write { db in
            try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, 0)", arguments: [NodeID().withBytes { Data($0) }])
            for (num, id) in [(1, kept), (2, gone)] {
                try db.execute(sql: "INSERT INTO entities (num, id, created_at) VALUES (?, ?, 0)", arguments: [num, id.withBytes { Data($0) }])
            }
            try db.execute(sql: "INSERT INTO pending_despawns (num) VALUES (2)")
            try db.execute(sql: "INSERT INTO session_state (id, clean_shutdown, session_id, started_at) VALUES (1, 1, x'00', 0)")
        }
        try queue.close()

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.entity(for: kept) != nil)
        #expect(engine.world.entity(for: gone) == nil)
        #expect(engine.world.nextEntityNumber == 3)
        #expect(try fixture.count(Self.waitingDespawns) == 1)
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 1)
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 0)
    }

    /// A commit of many despawns (a level unloaded) deletes their rows at once, a waiting
    /// spawn among them included: the table of waiting entities stays small.
    @Test func aCommitOfManyDespawnsDeletesTheirRowsAtOnce() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let count = EntityRowsPart.waitingDespawnsPerCommit * 3
        let old = (0 ..< count).map { i in engine.world.spawn(Position(x: Float(i), y: 0)) }
        #expect(engine.flushNow())
        #expect(engine.compactNow())
        let oldID = engine.world.id(of: old[0])!
        _ = try engine.jobs.enqueue("render", for: oldID)
        let waiting = engine.world.spawn(Position(x: -1, y: 0))
        let waitingID = engine.world.id(of: waiting)!
        #expect(engine.flushNow())
        #expect(try fixture.count(Self.waitingSpawns) == 1)
        let kept = engine.world.spawn(Title("kept"))
        let keptID = engine.world.id(of: kept)!
        for entity in old + [waiting] { engine.world.despawn(entity) }
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 0, "deleted at once")
        #expect(try fixture.count("SELECT count(*) FROM components") == 0, "their base rows by cascade")
        #expect(try fixture.count(Self.waitingDespawns) == 0)
        #expect(try fixture.count(Self.waitingSpawns) == 1, "the kept entity's, spawned in the same commit")
        #expect(try engine.jobs.jobs().isEmpty)
        #expect(try fixture.entityCount() == 1)
        try engine.shutdown()

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.entity(for: oldID) == nil && engine.world.entity(for: waitingID) == nil)
        #expect(engine.world.entity(for: keptID) != nil)
        #expect(engine.recovery.loaded.orphanRows == 0)
    }
}

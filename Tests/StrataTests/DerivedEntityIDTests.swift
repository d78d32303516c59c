import Foundation
import GRDB
import Logging
import Testing
@testable import Strata

/// Entity ids made from the document's node and the entity's number (schema 23): the file
/// stores NULL for them, every reader makes them again, no number (so no such id) is ever
/// given twice, and a restore, which gives the document a new node, writes them out first.
@Suite struct DerivedEntityIDTests {
    @Test func anIdGivesBackItsNumberInItsOwnDocumentOnly() throws {
        let node = NodeID(), other = NodeID()
        for number: EntityNumber in [1, 2, 127, 128, 16_383, 16_384, 1 << 42, EntityID.highestDerivedNumber] {
            let id = try #require(EntityID(node: node, number: number))
            #expect(id.derivedNumber(node: node) == number)
            #expect(id.derivedNumber(node: other) == nil)
            #expect(id != StoredOperation.derivedID(node: node, seq: number), "an operation's id made from the same number is another")
        }
        #expect(EntityID(node: node, number: 0) == nil && EntityID(node: node, number: -1) == nil)
        #expect(EntityID(node: node, number: EntityID.highestDerivedNumber + 1) == nil)
        #expect(EntityID().derivedNumber(node: node) == nil)
    }

    @Test func sqlMakesTheSameIdAsSwift() throws {
        let node = NodeID()
        let numbers: [EntityNumber] = [1, 5, 127, 128, 300, 65_537, 1 << 35, EntityID.highestDerivedNumber]
        let queue = try DatabaseQueue()
        let made = try queue.read { db in
            try numbers.map { number in
                try Data.fetchOne(db, sql: "SELECT \(EntityIDColumn.derivedSQL(node: "?1", number: "?2"))",
                                  arguments: [node.withBytes { Data($0) }, number])
            }
        }
        #expect(made == numbers.map { number in EntityID(node: node, number: number)?.withBytes { Data($0) } })
    }

    @Test func aSpawnedEntityStoresNoIdAndEveryReaderMakesItAgain() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        // More than a commit's waiting spawns: they are rows of `entities` at once.
        let entities = (0 ..< 100).map { engine.world.spawn(Title("t\($0)")) }
        let ids = entities.compactMap { engine.world.id(of: $0) }
        let given = EntityID()
        engine.world.insert(Title("given"), for: engine.world.spawn(id: given))
        #expect(ids.enumerated().allSatisfy { i, id in id.derivedNumber(node: engine.nodeID) == EntityNumber(i + 1) })
        #expect(engine.flushNow())
        let job = try engine.jobs.enqueue("render", for: ids[7])
        #expect(job.entity == ids[7], "a job names its entity by the id made again")
        let asset = try engine.assets.write([1], for: ids[8])
        #expect(try engine.assets.assets(for: ids[8]).map(\.name) == [asset.name])
        try engine.shutdown()

        #expect(try fixture.count("SELECT count(*) FROM entities WHERE id IS NULL") == 100)
        #expect(try fixture.count("SELECT count(*) FROM entities WHERE id = ?", [given.withBytes { Data($0) }]) == 1,
                "an id the host gave is stored as it is")
        let persisted = try fixture.persisted()
        #expect(ids.allSatisfy { persisted.entities[$0] != nil } && persisted.entities[given] != nil)
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.loaded.entities == 101 && engine.recovery.loaded.malformedEntityRows == 0)
        for (i, id) in ids.enumerated() {
            let entity = try #require(engine.world.entity(for: id))
            #expect(engine.world.get(Title.self, for: entity) == Title("t\(i)"))
        }
        #expect(inspection.digest == engine.world.digest())
        #expect(try engine.jobs.jobs().map(\.entity) == [ids[7]])
    }

    @Test func aNumberIsNeverGivenTwiceOnceItsRowsAreGone() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let entities = (0 ..< 100).map { engine.world.spawn(Title("t\($0)")) }
        #expect(engine.flushNow())
        let last = try #require(engine.world.id(of: entities[99]))
        // A despawn of more than a commit's waiting despawns deletes the rows at once.
        for entity in entities[30...] { engine.world.despawn(entity) }
        #expect(engine.flushNow())
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT max(num) FROM entities") == 30)
        #expect(try fixture.count("SELECT numbers_through FROM replica") == 100)
        try engine.shutdown()

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.nextEntityNumber == 101)
        let fresh = try #require(engine.world.id(of: engine.world.spawn(Title("fresh"))))
        #expect(fresh != last && fresh.derivedNumber(node: engine.nodeID) == 101)
    }

    /// A spawn despawned while it waits never becomes a row: its number is kept when its
    /// waiting rows go. A spawn that moves into `entities` keeps its number there.
    @Test func aWaitingSpawnDespawnedKeepsItsNumberAndOneMovedIntoEntitiesIsStillThere() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let gone = engine.world.spawn(Title("gone")), kept = engine.world.spawn(Title("kept"))
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 2, "a few spawns wait")
        engine.world.despawn(gone)
        #expect(engine.flushNow())
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 0)
        #expect(try fixture.count("SELECT num FROM entities") == 2, "kept, numbered 2, is a row")
        #expect(try fixture.count("SELECT numbers_through FROM replica") == 1, "gone's number, not kept's")
        let keptID = try #require(engine.world.id(of: kept))
        try engine.shutdown()
        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.entity(for: keptID) != nil && engine.world.nextEntityNumber == 3)
    }

    @Test func aRestoreWritesTheIdsOutBeforeTheNodeChanges() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let ids = (0 ..< 100).map { engine.world.spawn(Title("t\($0)")) }.compactMap { engine.world.id(of: $0) }
        #expect(engine.flushNow())
        let backup = fixture.directory.url.appendingPathComponent("b.db").path
        try engine.backup(to: backup)
        let document = engine.store.location.path
        let node = engine.nodeID
        try engine.shutdown()

        _ = try Backup.restore(from: backup, to: document, replacing: true)
        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.nodeID != node)
        #expect(try fixture.count("SELECT count(*) FROM entities WHERE id IS NULL") == 0)
        for (i, id) in ids.enumerated() {
            let entity = try #require(engine.world.entity(for: id), "entity \(i) keeps its id")
            #expect(engine.world.get(Title.self, for: entity) == Title("t\(i)"))
        }
        let next = try #require(engine.world.id(of: engine.world.spawn(Title("new"))))
        #expect(next.derivedNumber(node: engine.nodeID) != nil && !ids.contains(next))
    }

    /// The ids stored as NULL are made from the `replica` row's node id, which a second
    /// row keeps too (`replica_copy`): a salvage that could not copy the first takes the
    /// second, and one that could copy neither says so, with how many entities it touches.
    @Test func aSalvageThatLosesTheNodeIdTakesItsCopyOrSaysWhoseIdsItWasMadeFor() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let node = engine.nodeID
        for i in 0 ..< 100 { engine.world.spawn(Title("t\(i)")) }
        #expect(engine.flushNow())
        try engine.shutdown()
        func salvage(_ name: String) throws -> (SalvageReport, node: Data?, copy: Data?) {
            let store = try Store(location: StoreLocation(path: fixture.directory.url.appendingPathComponent(name).path))
            defer { try? store.close() }
            let report = Salvage.run(from: fixture.directory.databasePath, into: store, logger: Logger(label: "test"))
            let nodes = try store.queue.read { db in
                (try Data.fetchOne(db, sql: "SELECT node_id FROM replica"), try Data.fetchOne(db, sql: "SELECT node_id FROM replica_copy"))
            }
            return (report, nodes.0, nodes.1)
        }
        let nodeBytes = node.withBytes { Data($0) }
        let kept = try salvage("kept.db")
        #expect(kept.0.unreadable.isEmpty, "the row came across: nothing to say")
        #expect(kept.node == nodeBytes && kept.copy == nodeBytes, "the new file's copy is filled as the row is copied")

        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { try $0.execute(sql: "DELETE FROM replica") }   // as a damaged page would lose it
        let copied = try salvage("copied.db")
        #expect(copied.0.unreadable.isEmpty, "\(copied.0.unreadable)")
        #expect(copied.0.rows["replica_copy"] == 1)
        #expect(copied.node == nodeBytes && copied.copy == nodeBytes)

        try queue.write { try $0.execute(sql: "DELETE FROM replica_copy") }
        try queue.close()
        let lost = try salvage("lost.db")
        #expect(lost.0.unreadable.contains { $0.contains("the ids of 100 entities were made from it") }, "\(lost.0.unreadable)")
        #expect(lost.node == nil)
    }

    /// An open that finds no `replica` row takes the node from its copy: the entities keep
    /// their ids, and the next spawn's number follows theirs.
    @Test func anOpenWithoutTheReplicaRowTakesTheNodeFromItsCopy() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let node = engine.nodeID
        let ids = (0 ..< 10).compactMap { engine.world.id(of: engine.world.spawn(Title("t\($0)"))) }
        #expect(engine.flushNow())
        try engine.shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { try $0.execute(sql: "DELETE FROM replica") }
        try queue.close()

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.nodeID == node)
        for id in ids { #expect(engine.world.entity(for: id) != nil) }
        #expect(engine.world.nextEntityNumber == 11)
        let row = try engine.store.queue.read { db in try Data.fetchOne(db, sql: "SELECT node_id FROM replica") }
        #expect(row == node.withBytes { Data($0) }, "the row is written again")
    }

    /// A copy that lost its row or holds another value is written again at the next open,
    /// from the `replica` row.
    @Test func aDamagedCopyOfTheNodeIdIsWrittenAgainAtOpen() throws {
        let fixture = EngineFixture()
        var engine = try fixture.open()
        let node = engine.nodeID.withBytes { Data($0) }
        try engine.shutdown()
        for damage in ["DELETE FROM replica_copy", "PRAGMA ignore_check_constraints = 1; UPDATE replica_copy SET node_id = 'abc'"] {
            let queue = try DatabaseQueue(path: fixture.directory.databasePath)
            try queue.writeWithoutTransaction { try $0.execute(sql: damage) }
            try queue.close()
            engine = try fixture.open()
            let copy = try engine.store.queue.read { db in try Data.fetchOne(db, sql: "SELECT node_id FROM replica_copy") }
            #expect(copy == node, "\(damage)")
            try engine.shutdown()
        }
    }

    @Test func rowsOfAnOlderSchemaKeepTheirIdsAndTheTableStaysWhereItIs() throws {
        let (queue, path) = try olderSchemaFile(upTo: "v22:")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let old = EntityID()
        try queue.write { db in
            try db.execute(sql: "INSERT INTO entities (num, id, created_at) VALUES (1, ?, 0)", arguments: [old.withBytes { Data($0) }])
        }
        #expect(throws: DatabaseError.self) {
            try queue.write { try $0.execute(sql: "INSERT INTO entities (num, created_at) VALUES (2, 0)") }
        }
        let root = "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = 'entities'"
        let rootBefore = try queue.read { db in try Int.fetchOne(db, sql: root) }
        try Store.migrator.migrate(queue)
        #expect(try queue.read { db in try Int.fetchOne(db, sql: root) } == rootBefore, "no copy")
        #expect(try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        try queue.write { try $0.execute(sql: "INSERT INTO entities (num, created_at) VALUES (2, 0)") }
        #expect(throws: DatabaseError.self, "an id that is stored is still 16 bytes and unique") {
            try queue.write { try $0.execute(sql: "INSERT INTO entities (num, id, created_at) VALUES (3, ?, 0)", arguments: [old.withBytes { Data($0) }]) }
        }
        #expect(try queue.read { db in try Data.fetchOne(db, sql: "SELECT id FROM entities WHERE num = 1") } == old.withBytes { Data($0) })
        try queue.close()
    }
}

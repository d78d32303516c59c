import Foundation
import GRDB
import Testing
@testable import Strata

/// This replica's operations stored without what their row says already (schema 21): no
/// id where it is made from the sequence, a component's type by number, and its entity by
/// number where the entity's id is made from one (schema 24). `operation_log`, what every
/// reader and the push read, gives each back as it was made.
@Suite struct StoredOperationTests {
    @Test(arguments: [1, 127, 128, 16_383, 16_384, 1 << 40, (1 << 56) - 1] as [Int64])
    func theIdMadeFromTheSequenceIsTheSameInSwiftAndInSQL(seq: Int64) throws {
        let node = NodeID()
        let id = try #require(StoredOperation.derivedID(node: node, seq: seq))
        let fromSQL = try DatabaseQueue().read { db in
            try Data.fetchOne(db, sql: "SELECT \(StoredOperation.idSQL(node: ":node", seq: ":seq"))",
                              arguments: ["node": node.withBytes { Data($0) }, "seq": seq])
        }
        #expect(fromSQL == id.withBytes { Data($0) })
        #expect(StoredOperation.derivedID(node: NodeID(), seq: seq) != id, "another node's ids differ")
        #expect(StoredOperation.derivedID(node: node, seq: seq + 1) != id)
    }

    @Test func aSequenceOutsideTheRangeHasNoIdMadeFromIt() {
        #expect(StoredOperation.derivedID(node: NodeID(), seq: 1 << 56) == nil)
        #expect(StoredOperation.derivedID(node: NodeID(), seq: 0) == nil)
    }

    @Test func loggedOperationsReadBackAsMadeFromShorterRows() throws {
        let a = try Replica("stored-a")
        let label = a.world.spawn(SharedLabel("hello"))
        let note = a.engine.appendOperation(kind: "host.note", payload: [1, 2, 3])
        #expect(a.engine.flushNow())
        let id = try #require(a.world.id(of: label))
        let value = SharedLabel("hello").encodedForTest
        let expected = ReplicatedOperation.component(entity: id, type: SharedLabel.typeName, version: 1, payload: value[...]).encoded()

        let logged = try a.committedOperations(after: 0)
        let component = try #require(logged.first { $0.kind == ReplicatedOperation.componentKind })
        #expect(component.payload == expected, "the type's name is given back in place")
        #expect(component.id == StoredOperation.derivedID(node: a.engine.nodeID, seq: component.seq))
        let host = try #require(logged.first { $0.kind == "host.note" })
        #expect(host == note, "a host's operation reads back whole, id included")

        let rows = try a.fixture.reader().read { db in
            try Row.fetchAll(db, sql: "SELECT seq, id, type, entity, length(payload) AS bytes FROM local_operations ORDER BY seq")
        }
        let typeNumber = try a.fixture.reader().read { db in
            try Int64.fetchOne(db, sql: "SELECT id FROM component_types WHERE name = ?", arguments: [SharedLabel.typeName])
        }
        let stored = try #require(rows.first { ($0["seq"] as Int64) == component.seq })
        #expect((stored["id"] as Data?) == nil, "the id is made from the sequence, not stored")
        #expect((stored["type"] as Int64?) == typeNumber)
        #expect((stored["entity"] as Int64?) == id.derivedNumber(node: a.engine.nodeID) && (stored["entity"] as Int64?) != nil,
                "the entity by its number: its id is made from it")
        #expect((stored["bytes"] as Int) == expected.count - 1 - SharedLabel.typeName.utf8.count - 16)
        let hostRow = try #require(rows.first { ($0["seq"] as Int64) == note.seq })
        #expect((hostRow["id"] as Data?) == nil && (hostRow["type"] as Int64?) == nil && (hostRow["bytes"] as Int) == 3)
        try a.engine.shutdown()
    }

    /// Rows logged before schema 21 keep their ids and names, and read as they did.
    @Test func rowsOfAnOlderSchemaReadAsTheyDid() throws {
        let (queue, path) = try olderSchemaFile(upTo: "v20:")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let node = NodeID(), id = NodeID(), entity = EntityID()
        let payload = ReplicatedOperation.component(entity: entity, type: "old.type", version: 2, payload: [9, 8, 7][...]).encoded()
        try queue.write { db in
            try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, 0)", arguments: [node.withBytes { Data($0) }])
            try db.execute(sql: "INSERT INTO component_types (name) VALUES ('old.type')")
            try db.execute(sql: "INSERT INTO local_operations (seq, id, timestamp, kind, payload) VALUES (1, ?, 65536, 1, ?)",
                           arguments: [id.withBytes { Data($0) }, Data(payload)])
        }
        let root = "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = 'local_operations'"
        let rootBefore = try queue.read { db in try Int.fetchOne(db, sql: root) }
        try Store.migrator.migrate(queue)
        #expect(try queue.read { db in try Int.fetchOne(db, sql: root) } == rootBefore, "the rows stay where they are: no copy")
        #expect(try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        try queue.write { db in   // an id may be NULL now, and a type set
            try db.execute(sql: "INSERT INTO local_operations (seq, timestamp, kind, payload, type) VALUES (2, 65537, 1, x'01', 1)")
        }
        let row = try #require(try queue.read { db in try Row.fetchOne(db, sql: "SELECT node, seq, id, timestamp, kind, payload FROM operation_log WHERE seq = 1") })
        let read = try #require(OperationLogReader.operation(row))
        #expect(read.id == id && read.node == node && read.seq == 1 && read.kind == ReplicatedOperation.componentKind)
        #expect(read.payload == payload)
        try queue.close()
    }

    /// A row whose type number names nothing in `component_types` (a damaged table) does
    /// not read: never with another name.
    @Test func aRowWhoseTypeIsMissingDoesNotRead() throws {
        let queue = try DatabaseQueue()
        try Store.migrator.migrate(queue)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, 0)", arguments: [NodeID().withBytes { Data($0) }])
            try db.execute(sql: "INSERT INTO local_operations (seq, timestamp, kind, type, payload) VALUES (1, 65536, 1, 99, x'01')")
        }
        let row = try #require(try queue.read { db in try Row.fetchOne(db, sql: "SELECT node, seq, id, timestamp, kind, payload FROM operation_log") })
        #expect(OperationLogReader.operation(row) == nil)
    }

    /// A row whose entity number makes no id (damage: text, zero, past 2^49) does not
    /// read; one that does gives the entity's id back in place, byte for byte.
    @Test func anEntityNumberGivesItsIdBackOrTheRowDoesNotRead() throws {
        let queue = try DatabaseQueue()
        try Store.migrator.migrate(queue)
        let node = NodeID()
        let entity = try #require(EntityID(node: node, number: 300))
        let whole = ReplicatedOperation.component(entity: entity, type: "t", version: 1, payload: [7, 7][...]).encoded()
        let stored = try #require(StoredOperation.withoutEntity(whole, node: node))
        #expect(stored.number == 300 && stored.stored.count == whole.count - 16)
        #expect(StoredOperation.withoutEntity(whole, node: NodeID()) == nil, "another document's entity keeps its id")
        try queue.write { db in
            try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, 0)", arguments: [node.withBytes { Data($0) }])
            for (seq, number) in [(1, 300), (2, 0), (3, EntityID.highestDerivedNumber + 1)] as [(Int64, Int64)] {
                try db.execute(sql: "INSERT INTO local_operations (seq, timestamp, kind, entity, payload) VALUES (?, 65536, 1, ?, ?)",
                               arguments: [seq, number, Data(stored.stored)])
            }
            try db.execute(sql: "INSERT INTO local_operations (seq, timestamp, kind, entity, payload) VALUES (4, 65536, 1, 'x', ?)",
                           arguments: [Data(stored.stored)])
        }
        let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT node, seq, id, timestamp, kind, payload FROM operation_log ORDER BY seq") }
        #expect(rows.map { OperationLogReader.operation($0)?.payload } == [whole, nil, nil, nil])
    }
}

/// A row of the log that does not read is named and passed over: the pages after it still
/// hold what they should (a short page ended a peer's read of that node early).
@Suite struct UnreadableOperationRowTests {
    @Test func aPagedReadNamesTheRowAndGoesOnPastIt() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        for n in 1 ... 10 { engine.appendOperation(kind: "edit.\(n)", payload: [UInt8(n)]) }
        #expect(engine.flushNow())
        let node = engine.nodeID
        try engine.shutdown()
        try DatabaseQueue(path: fixture.directory.databasePath).write { db in
            try db.execute(sql: "UPDATE local_operations SET type = 99 WHERE seq = 4")   // names no type: the row does not read
        }

        let reader = try OperationLogReader(path: fixture.directory.databasePath)
        var seen: [Int64] = [], unreadable: [NodeID: [Int64]] = [:], pages: [Int] = []
        var page = try reader.missing(for: [:], limit: 3)
        while true {
            seen += page.operations.map(\.seq)
            pages.append(page.operations.count)
            unreadable.merge(page.unreadable) { $0 + $1 }
            guard let next = page.next else { break }
            page = try reader.missing(for: [:], from: next, limit: 3)
        }
        #expect(seen == [1, 2, 3, 5, 6, 7, 8, 9, 10])
        #expect(pages == [3, 3, 3, 0], "every page full while the log has operations")
        #expect(unreadable == [node: [4]])
        #expect(try reader.operations(of: node, after: 2, limit: 3).map(\.seq) == [3, 5, 6])
    }
}

import Foundation
import GRDB
import Testing
@testable import Strata

/// Stored stamps name their nodes and types by the document's numbers (`replica_nodes`,
/// `component_types`): whatever moves the rows moves the numbers with them.
@Suite struct StoredStampTests {
    /// Every replicated entity's stamps, by id.
    func stamps(_ replica: Replica) -> [EntityID: ReplicaState] {
        var states: [EntityID: ReplicaState] = [:]
        for entity in replica.world.entities {
            let state = replica.world.replicaState(at: entity.index)
            if !state.isEmpty, let id = replica.world.id(of: entity) { states[id] = state }
        }
        return states
    }

    /// Two devices' stamps in one document (its own and a peer's), and a value held back.
    func sharedDocument() throws -> (Replica, Replica) {
        let (a, b, server) = (try Replica("stamps-a"), try Replica("stamps-b"), LoopbackServer())
        for i in 0 ..< 20 { a.world.spawn(SharedPosition(x: Float(i), y: 0), SharedLabel("a\(i)")) }
        for i in 0 ..< 5 { b.world.spawn(SharedLabel("b\(i)")) }
        try server.deliver(from: b, to: a)
        // A newer payload version than this build reads: held, with its stamp.
        a.engine.receiveOperation(peerOperation(.component(entity: EntityID(), type: SharedLabel.typeName, version: 9, payload: [1]),
                                                node: b.engine.nodeID, seq: 100, milliseconds: a.wall.milliseconds))
        a.tick()
        #expect(a.engine.flushNow())
        return (a, b)
    }

    @Test func aSalvageKeepsEveryStampAndHeldValue() throws {
        let (a, b) = try sharedDocument()
        let before = stamps(a)
        #expect(before.count == 26 && before.values.contains { !$0.held.isEmpty })
        #expect(Set(before.values.flatMap { $0.stamps.map { $0.stamp.nodeLow } }).count == 2, "two devices' stamps")
        try a.engine.shutdown()
        let location = StoreLocation(path: a.fixture.directory.databasePath)
        _ = try Repair.run(location, cause: "a test", options: Engine.storeOptions(config: a.fixture.config, options: a.fixture.options),
                           logger: quietLogger)
        try a.restart()
        #expect(stamps(a) == before)
        try a.engine.shutdown()
        try b.engine.shutdown()
    }

    /// A node or type number a row names but the document lacks (a damaged table): the
    /// row does not load, is counted and reported, and stays in the file.
    @Test func aStampNamingAMissingNodeIsReportedNotTrusted() throws {
        let (a, b) = try sharedDocument()
        try a.engine.shutdown()
        let queue = try DatabaseQueue(path: a.fixture.directory.databasePath)
        try queue.write { db in try db.execute(sql: "DELETE FROM replica_nodes") }
        try queue.close()
        try a.restart()
        #expect(a.engine.recovery.loaded.undecodableRows > 0)
        #expect(stamps(a).isEmpty)
        try a.engine.shutdown()
        try b.engine.shutdown()
    }

    /// A number the writer resolved in a transaction that rolled back is not used again (its
    /// row is gone with it); one a commit kept stays, whatever rolls back later.
    @Test func aRolledBackNumberIsNotReusedAndACommittedOneStays() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE component_types (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                CREATE TABLE replica_nodes (idx INTEGER PRIMARY KEY, node BLOB NOT NULL UNIQUE CHECK (length(node) = 16));
                """)
        }
        let index = StampIndex()
        let (kept, lost) = (OperationStamp(timestamp: 1, nodeHigh: 1, nodeLow: 1), OperationStamp(timestamp: 1, nodeHigh: 2, nodeLow: 2))
        let first = try queue.write { db in try index.number(ofNodeOf: kept, db) }
        index.didCommit()
        try queue.inTransaction { db in
            _ = try index.number(ofNodeOf: lost, db)
            _ = try index.number(ofType: "gone.type", db)
            return .rollback
        }
        index.didRollBack()
        try queue.write { db in
            #expect(try index.number(ofNodeOf: kept, db) == first)
            let again = try index.number(ofNodeOf: lost, db)
            #expect(try Data.fetchOne(db, sql: "SELECT node FROM replica_nodes WHERE idx = ?", arguments: [again]) != nil,
                    "inserted again, not a number whose row rolled back")
            let type = try index.number(ofType: "gone.type", db)
            #expect(try String.fetchOne(db, sql: "SELECT name FROM component_types WHERE id = ?", arguments: [type]) == "gone.type")
        }
    }
}

import Foundation
import Testing
@testable import Strata

/// Replicated components: changes become operations at the critical flush, coalesced;
/// other devices apply them by stamp, with no host code; the host is told what changed.
@Suite struct ReplicationTests {
    /// The operations `replica` logged of `kind` (committed).
    func logged(_ replica: Replica, kind: String = ReplicatedOperation.componentKind) throws -> [ReplicatedOperation] {
        try replica.committedOperations(after: 0).filter { $0.kind == kind }
            .map { try ReplicatedOperation(kind: $0.kind, payload: $0.payload) }
    }

    /// `a` makes a shape, commits it, and `b` receives it through `server`.
    func shareAShape(from a: Replica, to b: Replica, through server: LoopbackServer,
                     _ value: SharedPosition = SharedPosition(x: 0, y: 0)) throws -> (shape: Entity, id: EntityID) {
        let shape = a.world.spawn(value)
        let id = try #require(a.world.id(of: shape))
        #expect(a.engine.flushNow())
        try server.push(from: a)
        server.pullAll(into: b)
        return (shape, id)
    }

    @Test func aDragOfManyTicksIsOneOperationWithinTheCriticalDelay() throws {
        let a = try Replica("drag-a") {
            $0.config.persistence.flushInterval = .seconds(30)   // derived rows wait; the operation does not
        }
        let shape = a.world.spawn(SharedPosition(x: 0, y: 0), Title("local, never logged"))
        #expect(a.engine.flushNow())
        #expect(try logged(a).count == 1, "the spawn's value")
        let synced = try #require(a.engine.countingVFS).counts.syncs
        for step in 1 ... 300 {
            a.world.mutate(SharedPosition.self, of: shape) { $0.x = Float(step) }
            a.tick()
        }
        // 300 ticks of 16 ms: 4.8 s of dragging, a critical flush a second.
        #expect(a.engine.waitForWriter())
        let operations = try logged(a)
        let last = try #require(operations.last)
        guard case let .component(id, type, version, _, _) = last else { Issue.record("\(last)"); return }
        #expect(id == a.world.id(of: shape) && type == SharedPosition.typeName && version == 1)
        var writer = PayloadWriter()
        SharedPosition(x: 300, y: 0).encode(to: &writer)
        let moves = operations.count - 1
        #expect(moves >= 4 && moves <= 6, "one operation per critical delay of dragging, not one per tick: \(moves)")
        // Not yet 300 on disk unless the last flush came after the last tick; flush and check it is one more at most.
        #expect(a.engine.flushNow())
        let final = try logged(a)
        guard case let .component(_, _, _, finalPayload, _) = final.last! else { return }
        #expect(finalPayload.map(Array.init) == writer.bytes, "the latest value")
        #expect(try a.committedOperations(after: 0).count == final.count, "nothing but replicated values was logged")
        let syncs = try #require(a.engine.countingVFS).counts.syncs - synced
        #expect(syncs <= 2 * (moves + 1), "a sync (WAL, and nothing else) per critical flush: \(syncs)")
        try a.engine.shutdown()
    }

    /// `replicate_interval_ms` longer than the critical delay: a replicated change waits
    /// for it, unless a critical change comes first, whose flush it rides.
    @Test func replicatedChangesWaitForTheirIntervalOrRideAnEarlierCriticalFlush() throws {
        let a = try Replica("interval-a") {
            $0.config.sync.replicateInterval = .seconds(3)
            $0.config.persistence.flushInterval = .seconds(30)
        }
        let shape = a.world.spawn(SharedPosition(x: 0, y: 0))
        #expect(a.engine.flushNow())
        let before = try logged(a).count
        a.world.insert(SharedPosition(x: 1, y: 0), for: shape)
        for _ in 0 ..< 150 { a.tick() }   // 2.4 s: past the critical delay, not the interval
        #expect(a.engine.waitForWriter())
        #expect(try logged(a).count == before, "not yet: the interval is 3 s")
        for _ in 0 ..< 50 { a.tick() }    // 3.2 s
        #expect(a.engine.waitForWriter())
        #expect(try logged(a).count == before + 1)

        a.world.insert(SharedPosition(x: 2, y: 0), for: shape)
        a.tick()
        a.world.spawn(Title("critical"))   // a critical change: due within the critical delay
        for _ in 0 ..< 70 { a.tick() }     // 1.1 s
        #expect(a.engine.waitForWriter())
        #expect(try logged(a).count == before + 2, "the move rode the critical flush")
        try a.engine.shutdown()
    }

    @Test func anotherDeviceAppliesSpawnsEditsRemovalsAndDespawnsWithNoHostCode() throws {
        let a = try Replica("apply-a"), b = try Replica("apply-b")
        let server = LoopbackServer()
        let shape = a.world.spawn(SharedPosition(x: 1, y: 2), SharedLabel("one"), Title("a's own"))
        let id = try #require(a.world.id(of: shape))
        a.world.insert(Cursor(x: 5), for: shape)
        #expect(a.engine.flushNow())
        try server.push(from: a)
        server.pullAll(into: b)
        let there = try #require(b.entity(id), "the entity exists there, with the same id")
        #expect(b.world.get(SharedPosition.self, for: there) == SharedPosition(x: 1, y: 2))
        #expect(b.world.get(SharedLabel.self, for: there) == SharedLabel("one"))
        #expect(b.world.get(Title.self, for: there) == nil, "local types stay home")
        #expect(b.changes.first == ReplicatedChange(kind: .spawned, entity: id))
        #expect(Set(b.changes.dropFirst().map(\.typeName)) == [SharedPosition.typeName, SharedLabel.typeName])

        b.changes.removeAll()
        b.world.mutate(SharedPosition.self, of: there) { $0.x = 10 }
        b.world.remove(SharedLabel.self, from: there)
        #expect(b.engine.flushNow())
        try server.push(from: b)
        server.pullAll(into: a)
        #expect(a.world.get(SharedPosition.self, for: shape) == SharedPosition(x: 10, y: 2))
        #expect(a.world.get(SharedLabel.self, for: shape) == nil)
        #expect(a.world.get(Title.self, for: shape) == Title("a's own"), "a's local value is untouched")
        #expect(a.changes.contains(ReplicatedChange(kind: .removed, entity: id, typeName: SharedLabel.typeName)))

        a.world.despawn(shape)
        #expect(a.engine.flushNow())
        try server.push(from: a)
        server.pullAll(into: b)
        #expect(b.entity(id) == nil)
        #expect(b.changes.last == ReplicatedChange(kind: .despawned, entity: id))
        #expect(a.engine.flushNow() && b.engine.flushNow())
        #expect(a.world.digest().replicated == b.world.digest().replicated)
        #expect(b.engine.replicationStatus.applied == 3 && a.engine.replicationStatus.applied == 2)
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    @Test func concurrentEditsEndWithTheHighestStampEverywhere() throws {
        let a = try Replica("lww-a"), b = try Replica("lww-b", wallStart: 1_800_000_000_500)   // b's clock is ahead
        let server = LoopbackServer()
        let (shape, id) = try shareAShape(from: a, to: b, through: server)
        // Both move it offline; b's edit is stamped later (its clock), so it wins on both.
        a.world.insert(SharedPosition(x: 1, y: 1), for: shape)
        b.world.insert(SharedPosition(x: 2, y: 2), for: try #require(b.entity(id)))
        #expect(a.engine.flushNow() && b.engine.flushNow())
        try server.push(from: a); try server.push(from: b)
        server.pullAll(into: a); server.pullAll(into: b)
        #expect(a.world.get(SharedPosition.self, for: shape) == SharedPosition(x: 2, y: 2))
        #expect(b.world.get(SharedPosition.self, for: try #require(b.entity(id))) == SharedPosition(x: 2, y: 2))
        #expect(a.engine.replicationStatus.applied == 1 && b.engine.replicationStatus.superseded == 1)
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    @Test func aDespawnWinsOverAConcurrentEditAndItsIdNeverComesBack() throws {
        let a = try Replica("tomb-a"), b = try Replica("tomb-b")
        let server = LoopbackServer()
        let (shape, id) = try shareAShape(from: a, to: b, through: server)
        b.world.despawn(try #require(b.entity(id)))
        #expect(b.engine.flushNow())
        a.tick(.seconds(5))
        a.world.insert(SharedPosition(x: 9, y: 9), for: shape)   // later than the despawn, still loses
        #expect(a.engine.flushNow())
        try server.push(from: b); try server.push(from: a)
        server.pullAll(into: a); server.pullAll(into: b)
        #expect(a.entity(id) == nil && b.entity(id) == nil)
        #expect(b.engine.replicationStatus.afterDespawn == 1)
        // The tombstone outlives a restart: the edit delivered again changes nothing.
        try b.restart()
        let c = try Replica("tomb-c")
        server.pullAll(into: c)
        #expect(c.entity(id) == nil, "a device joining later applies the operations in server order: the despawn is last")
        for operation in server.operations { b.engine.receiveOperation(LoggedOperation(node: NodeID(), seq: 1, timestamp: operation.timestamp, kind: operation.kind, payload: operation.payload)) }
        #expect(b.entity(id) == nil, "edits of a despawned id, even new ones, never bring it back")
        try a.engine.shutdown(); try b.engine.shutdown(); try c.engine.shutdown()
    }

    /// Retention drops what every peer acknowledged, but a despawn is a tombstone: it stays,
    /// below the floor, and the clock and the log's summary do not count it as a gap.
    @Test func aTombstoneOutlivesRetention() throws {
        let a = try Replica("retain-a") { $0.config.operationLog.retentionMinAge = .zero }
        let b = try Replica("retain-b")
        let server = LoopbackServer()
        let (shape, id) = try shareAShape(from: a, to: b, through: server)
        b.world.insert(SharedPosition(x: 5, y: 5), for: try #require(b.entity(id)))   // offline: it has not seen the despawn
        #expect(b.engine.flushNow())
        a.world.despawn(shape)
        a.engine.appendOperation(kind: "note", payload: [])
        #expect(a.engine.flushNow())
        a.engine.recordAcknowledgement(from: NodeID(), clock: [a.engine.nodeID: 100])
        #expect(a.engine.flushNow())
        #expect(try a.committedOperations(after: 0).map(\.kind) == [ReplicatedOperation.despawnKind], "the rest went")
        try a.restart()
        #expect(a.engine.vectorClock[a.engine.nodeID] == 3 && a.engine.operationGaps.isEmpty)
        let summary = try #require(try OperationLogReader(path: a.fixture.directory.databasePath).summary()[a.engine.nodeID])
        #expect(summary.gaps.isEmpty && summary.dropped == 3 && summary.highest == 3)
        try server.push(from: b)
        server.pullAll(into: a)
        #expect(a.entity(id) == nil, "the edit made before the despawn was seen does not bring it back")
        #expect(a.engine.replicationStatus.afterDespawn == 1)
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    @Test func appliedValuesAndTheirStampsSurviveARestartTogether() throws {
        let a = try Replica("stamp-a"), b = try Replica("stamp-b")
        let server = LoopbackServer()
        let shape = a.world.spawn(SharedLabel("first"))
        let id = try #require(a.world.id(of: shape))
        #expect(a.engine.flushNow())
        a.tick(.seconds(1))
        a.world.insert(SharedLabel("second"), for: shape)
        #expect(a.engine.flushNow())
        try server.push(from: a)
        let (first, second) = (server.operations[0], server.operations[1])
        b.engine.receiveOperation(second)
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(id))) == SharedLabel("second"))
        #expect(b.engine.flushNow())
        #expect(try b.fixture.componentCount(SharedLabel.self) == 1)
        try b.crash()
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(id))) == SharedLabel("second"))
        b.engine.receiveOperation(first)   // older: the stamp kept in the file says so
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(id))) == SharedLabel("second"))
        #expect(b.engine.replicationStatus.superseded == 1)
        try a.engine.shutdown(); try b.engine.shutdown()
    }
}

import Foundation
import GRDBSQLite
import Testing
@testable import Strata

/// The stamps live in the world's stamp table and are stored whole in each entity's
/// `strata.replica` row: what the table keeps and what the row says must stay one thing,
/// through reloads, builds that do not know a type, and reused entity slots.
@Suite struct StampTableTests {
    /// A column's stamps by slot, in chunks: every slot keeps its stamp across chunk
    /// boundaries and far past the last one, and an unset slot reads as none.
    @Test func stampsKeepTheirSlotsAcrossChunks() {
        var table = StampTable()
        table.add(3, name: "b")
        table.add(1, name: "a")
        let slots: [UInt32] = [0, 16_383, 16_384, 16_385, 50_000, 1_000_003]
        for (i, slot) in slots.enumerated() {
            table.set(3, slot, OperationStamp(timestamp: Int64(i + 1), nodeHigh: 7, nodeLow: UInt64(i)))
        }
        for (i, slot) in slots.enumerated() { #expect(table.stamp(3, slot).timestamp == Int64(i + 1)) }
        #expect(table.stamp(3, 1).isZero && table.stamp(3, 999_999).isZero && table.stamp(3, 5_000_000).isZero)
        #expect(table.stamp(1, 16_384).isZero, "another column's")
        #expect(table.hasAny(50_000) && !table.hasAny(50_001))
        table.clear(16_384)
        #expect(table.stamp(3, 16_384).isZero && table.stamp(3, 16_385).timestamp == 4)
        table.reserve(slots: 2_000_000)
        #expect(table.stamp(3, 1_000_003).timestamp == 6, "reserving keeps what is there")
    }

    @Test func aStampOfATypeThisBuildDoesNotKnowSurvivesInTheStoredState() throws {
        let a = try Replica("stamps-a"), b = try Replica("stamps-b")
        let server = LoopbackServer()
        let shape = a.world.spawn(SharedPosition(x: 1, y: 1), SharedLabel("first"))
        let id = try #require(a.world.id(of: shape))
        try server.deliver(from: a, to: b)
        #expect(b.engine.flushNow())
        let stored = b.world.replicaState(at: try #require(b.entity(id)).index)
        #expect(stored.stamps.map(\.type) == [SharedLabel.typeName, SharedPosition.typeName])

        // A build without the label: its stamp is kept beside the entity, not in the table.
        try b.restart(types: testComponents + [SharedPosition.self])
        var there = try #require(b.entity(id))
        #expect(b.world.replicaState(at: there.index) == stored, "the same state, split")
        #expect(b.world.get(ReplicaState.self, for: there)?.stamps.map(\.type) == [SharedLabel.typeName])

        // A move applied there rewrites the stored state: the label's stamp goes with it.
        a.world.insert(SharedPosition(x: 9, y: 9), for: shape)
        try server.deliver(from: a, to: b)
        #expect(b.engine.flushNow())
        #expect(b.world.get(SharedPosition.self, for: there) == SharedPosition(x: 9, y: 9))

        // The build that knows the label again: an older label loses to the kept stamp.
        try b.restart(types: replicatedTestComponents)
        there = try #require(b.entity(id))
        #expect(b.world.replicaState(at: there.index).stamps.first { $0.type == SharedLabel.typeName } == stored.stamps.first)
        #expect(b.world.get(ReplicaState.self, for: there) == nil, "every stamp has its column again")
        let older = ReplicatedOperation.component(entity: id, type: SharedLabel.typeName, version: 1, payload: SharedLabel("older").encodedForTest[...])
        b.engine.receiveOperation(peerOperation(older, milliseconds: a.wall.milliseconds - 3_600_000))
        b.engine.endTick()
        #expect(b.world.get(SharedLabel.self, for: there) == SharedLabel("first"))
        #expect(b.engine.replicationStatus.superseded == 1)
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    @Test func aDespawnedEntitysSlotComesBackWithoutItsStamps() throws {
        let b = try Replica("slots-b")
        let id = EntityID()
        let value = ReplicatedOperation.component(entity: id, type: SharedLabel.typeName, version: 1, payload: SharedLabel("peer's").encodedForTest[...])
        b.engine.receiveOperation(peerOperation(value, milliseconds: b.wall.milliseconds))
        b.engine.endTick()
        let pulled = try #require(b.entity(id))
        #expect(b.world.isReplicated(pulled))
        b.world.despawn(pulled)
        #expect(b.world.replicas.status.logged == 1, "a replicated entity's despawn is an operation")
        let local = b.world.spawn(Title("mine"))
        #expect(local.index == pulled.index, "the slot is reused")
        #expect(!b.world.isReplicated(local) && b.world.replicaState(at: local.index).isEmpty)
        b.world.despawn(local)
        #expect(b.world.replicas.status.logged == 1, "a local entity's despawn is not")
        #expect(b.engine.flushNow())
        try b.engine.shutdown()
    }

    @Test func aParkedStoredStateIsMergedIntoTheWorldsNotWrittenOverIt() throws {
        // Rows of more than 16 KiB are refused for good (SQLITE_TOOBIG) and parked: here the
        // entity's stored state, which holds a 20 KB value of a type this build does not know.
        var fixture = EngineFixture()
        fixture.options.prepareConnection = { db in _ = sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, 16 * 1024) }
        func open() throws -> Engine {
            try Engine.open(config: fixture.config, components: replicatedTestComponents, logger: quietLogger, options: fixture.options)
        }
        var engine = try open()
        let peer = NodeID(), id = EntityID()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func position(_ x: Float, seq: Int64, at milliseconds: Int64) -> LoggedOperation {
            peerOperation(.component(entity: id, type: SharedPosition.typeName, version: 1, payload: SharedPosition(x: x, y: 0).encodedForTest[...]),
                          node: peer, seq: seq, milliseconds: milliseconds)
        }
        let unknown = ReplicatedOperation.component(entity: id, type: "test.unknown", version: 1, payload: Array(repeating: 7, count: 20_000)[...])
        engine.receiveOperation(peerOperation(unknown, node: peer, seq: 1, milliseconds: now))
        engine.receiveOperation(position(1, seq: 2, at: now))
        #expect(engine.flushNow())
        #expect(try engine.rejectedWrites().map(\.name).contains(ReplicaState.typeName))
        try engine.shutdown()

        // The cause gone, newer values arrive before the parked rows are replayed.
        fixture.options.prepareConnection = nil
        engine = try open()
        engine.receiveOperation(position(2, seq: 3, at: now + 60_000))
        #expect(engine.flushNow())
        let entity = try #require(engine.world.entity(for: id))
        let stamp = engine.world.replicaState(at: entity.index).stamps.first { $0.type == SharedPosition.typeName }?.stamp
        #expect(engine.replicationStatus.heldNow.isEmpty, "the held value was in the parked row only")
        #expect(try engine.replayRejectedWrites().kept.isEmpty)
        #expect(engine.flushNow())
        #expect(try engine.rejectedWrites().isEmpty)
        try engine.shutdown()

        engine = try open()
        let reopened = try #require(engine.world.entity(for: id))
        let state = engine.world.replicaState(at: reopened.index)
        #expect(state.stamps.first { $0.type == SharedPosition.typeName }?.stamp == stamp, "no stamp moved back")
        #expect(state.heldValue(of: "test.unknown")?.payload?.count == 20_000, "the parked held value is back")
        #expect(engine.replicationStatus.heldNow == ["unknown type": 1])
        try engine.shutdown()
    }
}

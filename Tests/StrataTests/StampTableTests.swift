import Foundation
import Testing
@testable import Strata

/// The stamps live in the world's stamp table and are stored whole in each entity's
/// `strata.replica` row: what the table keeps and what the row says must stay one thing,
/// through reloads, builds that do not know a type, and reused entity slots.
@Suite struct StampTableTests {
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
}

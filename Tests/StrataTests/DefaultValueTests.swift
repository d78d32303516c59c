import Foundation
import Testing
@testable import Strata

/// `World.insertDefault`: a value a host gives a well-known entity at start (a document's
/// name) fills a gap and never replaces what a device wrote, whatever order things arrive in.
@Suite struct DefaultValueTests {
    /// The same id on every device, as a host's well-known entity (a document) has.
    let documentID = EntityID(UUID(uuidString: "00000000-0000-4000-8000-0000000000aa") ?? UUID())

    /// A's real value reaches B after B's default, and B's default reaches A after A's value:
    /// both hold A's value, and keep it through a restart.
    @Test func aDefaultLosesToAValueWrittenBeforeItWheneverEitherArrives() throws {
        let a = try Replica("default-a"), b = try Replica("default-b", wallStart: 1_800_000_100_000)   // B's clock is later
        let server = LoopbackServer()
        let onA = a.world.spawn(id: documentID)
        a.world.insert(SharedLabel("Q3 plan"), for: onA)
        a.tick()
        #expect(a.engine.flushNow())
        try server.push(from: a)

        // B opens the document for the first time, offline: its default is there at once.
        let onB = b.world.spawn(id: documentID)
        #expect(b.world.insertDefault(SharedLabel("Untitled"), for: onB))
        #expect(b.world.get(SharedLabel.self, for: onB) == SharedLabel("Untitled"))
        #expect(!b.world.insertDefault(SharedLabel("again"), for: onB), "a default fills a gap only")
        b.tick()
        #expect(b.engine.flushNow())
        try server.push(from: b)

        server.pullAll(into: b)
        b.tick()
        server.pullAll(into: a)
        a.tick()
        for replica in [a, b] {
            #expect(replica.world.get(SharedLabel.self, for: try #require(replica.entity(documentID))) == SharedLabel("Q3 plan"), "\(replica.name)")
        }
        #expect(a.engine.replicationStatus.superseded == 1, "B's default reached A and lost")
        try b.restart()
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(documentID))) == SharedLabel("Q3 plan"))
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    /// A default applied first is replaced by a value written after it, and a removal
    /// written anywhere beats a default too.
    @Test func anyValueOrRemovalADeviceWritesReplacesADefault() throws {
        let a = try Replica("fill-a"), b = try Replica("fill-b")
        let server = LoopbackServer()
        let onA = a.world.spawn(id: documentID)
        #expect(a.world.insertDefault(SharedLabel("Untitled"), for: onA))
        a.world.insert(SharedPosition(x: 1, y: 2), for: onA)
        try server.deliver(from: a, to: b)
        b.tick()
        let onB = try #require(b.entity(documentID))
        #expect(b.world.get(SharedLabel.self, for: onB) == SharedLabel("Untitled"), "a default with nothing against it applies")
        #expect(!b.world.insertDefault(SharedLabel("B's default"), for: onB), "the entity has a value")

        b.world.remove(SharedLabel.self, from: onB)
        b.tick()
        try server.deliver(from: b, to: a)
        a.tick()
        #expect(a.world.get(SharedLabel.self, for: onA) == nil, "B's removal beat A's default")
        #expect(!a.world.insertDefault(SharedLabel("Untitled"), for: onA), "a removal a device wrote is not a gap")
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    /// Two devices' defaults: the same one wins on both, whichever arrives first.
    @Test func twoDefaultsSettleOnTheSameOneEverywhere() throws {
        let a = try Replica("defaults-a"), b = try Replica("defaults-b")
        let server = LoopbackServer()
        a.world.insertDefault(SharedLabel("A's"), for: a.world.spawn(id: documentID))
        b.world.insertDefault(SharedLabel("B's"), for: b.world.spawn(id: documentID))
        a.tick(); b.tick()
        #expect(a.engine.flushNow() && b.engine.flushNow())
        try server.push(from: a); try server.push(from: b)
        server.pullAll(into: a); server.pullAll(into: b)
        a.tick(); b.tick()
        let winner = a.engine.nodeID.description > b.engine.nodeID.description ? "A's" : "B's"
        for replica in [a, b] {
            #expect(replica.world.get(SharedLabel.self, for: try #require(replica.entity(documentID))) == SharedLabel(winner), "\(replica.name)")
        }
        // An edit of a default is an edit: it wins as any edit does.
        let onA = try #require(a.entity(documentID))
        a.world.mutate(SharedLabel.self, of: onA) { $0.text += ", renamed" }
        try server.deliver(from: a, to: b)
        b.tick()
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(documentID))) == SharedLabel(winner + ", renamed"))
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    /// The operation says it is a default; a build that reads only the first format keeps
    /// it as malformed (never applied over a real value, never dropped).
    @Test func aDefaultIsItsOwnFormatOnTheWire() throws {
        let value = ReplicatedOperation.component(entity: documentID, type: SharedLabel.typeName, version: 1,
                                                  payload: SharedLabel("Untitled").encodedForTest[...], isDefault: true)
        let bytes = value.encoded()
        #expect(bytes.first == ReplicatedOperation.defaultFormat)
        #expect(try ReplicatedOperation(kind: ReplicatedOperation.componentKind, payload: bytes) == value)
        var despawn = ReplicatedOperation.despawn(entity: documentID).encoded()
        despawn[0] = ReplicatedOperation.defaultFormat
        #expect(throws: PayloadError.self) { try ReplicatedOperation(kind: ReplicatedOperation.despawnKind, payload: despawn) }
        #expect(OperationStamp.ofDefault(node: NodeID()) < OperationStamp(timestamp: HybridTimestamp(milliseconds: 1), node: NodeID()))
        #expect(OperationStamp.ofDefault(node: NodeID()) > .zero)
    }

    /// A local type's default is an ordinary insert: nothing is logged.
    @Test func aLocalTypesDefaultIsAPlainInsert() throws {
        let a = try Replica("default-local")
        let entity = a.world.spawn()
        #expect(a.world.insertDefault(Title("mine"), for: entity))
        #expect(!a.world.insertDefault(Title("other"), for: entity))
        #expect(a.world.get(Title.self, for: entity) == Title("mine"))
        #expect(a.engine.replicationStatus.logged == 0)
        try a.engine.shutdown()
    }
}

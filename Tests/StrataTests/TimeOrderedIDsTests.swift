import Foundation
import GRDB
import Testing
@testable import Strata

/// Ids made where none is stored are UUID version 7: in time order, so the indexes they
/// key grow at their right edge; new entities' and this replica's operations' ids are made
/// from the node and their number (stored as NULL), which grow too; documents of random
/// (version 4) ids keep working.
@Suite struct TimeOrderedIDsTests {
    func bytes(_ id: EntityID) -> [UInt8] { id.withBytes { Array($0) } }

    @Test func idsCarryTheirMillisecondAndVersionAndStrictlyIncrease() {
        var ids = TimeOrderedIDs()
        var previous: [UInt8] = []
        for ms in [Int64(1_700_000_000_000), 1_700_000_000_000, 1_700_000_000_001, 1_699_999_999_999, 1_700_000_000_005] {
            let id = ids.make(milliseconds: ms)
            let b = bytes(id)
            #expect(id.isTimeOrdered)
            #expect(b[8] >> 6 == 0b10, "the RFC 9562 variant")
            let stamp = b[0 ..< 6].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            #expect(stamp >= min(ms, 1_700_000_000_001), "the millisecond first (a clock that steps back keeps the last)")
            #expect(previous.lexicographicallyPrecedes(b), "each id sorts after the one before, as SQLite compares BLOBs")
            previous = b
        }
        #expect(!EntityID().isTimeOrdered, "EntityID() is still a random (version 4) id")
    }

    @Test func aMillionIdsInOneMillisecondStillIncrease() {
        var ids = TimeOrderedIDs()
        var previous = bytes(ids.make(milliseconds: 5))
        for _ in 0 ..< 1_000_000 {
            let next = bytes(ids.make(milliseconds: 5))
            #expect(previous.lexicographicallyPrecedes(next))
            previous = next
        }
    }

    /// Spawns get ids made from the node and their number (`EntityIDColumn`), this
    /// replica's operations from the node and the sequence (`StoredOperation`): no row
    /// stores them, and they grow with the number and the sequence.
    @Test func spawnsAndLocalOperationsGetIdsMadeFromTheirNumbers() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let a = engine.world.spawn(Title("a")), b = engine.world.spawn(Title("b"))
        let idA = try #require(engine.world.id(of: a)), idB = try #require(engine.world.id(of: b))
        #expect(idA.derivedNumber(node: engine.nodeID) != nil && idB.derivedNumber(node: engine.nodeID) != nil)
        #expect(bytes(idA).lexicographicallyPrecedes(bytes(idB)))
        let op = engine.appendOperation(kind: "k", payload: []), next = engine.appendOperation(kind: "k", payload: [])
        #expect(op.id == StoredOperation.derivedID(node: engine.nodeID, seq: op.seq))
        #expect(bytes(op.id).lexicographicallyPrecedes(bytes(next.id)))
        try engine.shutdown()
    }

    /// A document of random ids (written before this build), then ids made from numbers:
    /// both load, compact and keep their operations.
    @Test func aMixedDocumentLoadsCompactsAndKeepsItsOperations() throws {
        let fixture = EngineFixture()
        let peer = NodeID()
        var random: [EntityID] = [], ordered: [EntityID] = []
        var node = NodeID()
        do {
            let engine = try fixture.open()
            node = engine.nodeID
            for i in 0 ..< 200 {
                let id = EntityID()   // version 4, as older builds made them
                random.append(id)
                let e = engine.world.spawn(id: id)
                engine.world.insert(Title("old \(i)"), for: e)
                engine.receiveOperation(LoggedOperation(id: EntityID(), node: peer, seq: Int64(i + 1),
                                                        timestamp: HybridTimestamp(milliseconds: Int64(i)), kind: "old", payload: [1]))
            }
            engine.flushNow()
            for i in 0 ..< 200 {
                let e = engine.world.spawn(Title("new \(i)"))
                ordered.append(engine.world.id(of: e)!)
                engine.appendOperation(kind: "new", payload: [2])
            }
            #expect(engine.compactNow())
            try engine.shutdown()
        }
        #expect(random.allSatisfy { $0.derivedNumber(node: node) == nil } && ordered.allSatisfy { $0.derivedNumber(node: node) != nil })
        let engine = try fixture.open()
        #expect(engine.world.entityCount == 400)
        for (i, id) in random.enumerated() {
            #expect(engine.world.entity(for: id).flatMap { engine.world.get(Title.self, for: $0) }?.text == "old \(i)")
        }
        for (i, id) in ordered.enumerated() {
            #expect(engine.world.entity(for: id).flatMap { engine.world.get(Title.self, for: $0) }?.text == "new \(i)")
        }
        #expect(engine.vectorClock == [peer: 200, engine.nodeID: 200])
        // And it goes on: more of both, another compaction, another reload.
        engine.world.spawn(id: EntityID())
        engine.world.spawn(Title("newer"))
        #expect(engine.compactNow())
        try engine.shutdown()
        let again = try fixture.open()
        #expect(again.world.entityCount == 402)
        try again.shutdown()
    }
}

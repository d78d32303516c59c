import Foundation
import Testing
@testable import Strata
import StrataCanvas

/// The world's id index (`EntityIndex`) against a `Dictionary` doing the same thing: inserts,
/// lookups and removals in a random order keep every id findable, whatever runs they form.
struct EntityIndexTests {
    /// Slots and the ids they hold, as the world's records keep them.
    private struct Records {
        var ids: [EntityID] = []
        func id(_ slot: UInt32) -> EntityID { ids[Int(slot)] }
    }

    @Test func anIdReadFromItsBytesIsThatId() throws {
        // Ids are loaded from their 16 bytes as a `UUID` (its `uuid_t`): byte order kept.
        let bytes: [UInt8] = Array(0x10 ... 0x1F)
        let id = try #require(bytes.withUnsafeBytes { EntityID(bytes: $0) })
        #expect(id.description == "10111213-1415-1617-1819-1a1b1c1d1e1f")
        #expect(id.withBytes { Array($0) } == bytes)
        #expect(bytes.dropLast().withUnsafeBytes { EntityID(bytes: $0) } == nil, "15 bytes are not an id")
    }

    @Test func randomInsertsLookupsAndRemovalsAgreeWithADictionary() {
        var generator = SplitMix64(seed: 0x5EED)
        var time = TimeOrderedIDs()
        var records = Records()
        var index = EntityIndex()
        var expected: [EntityID: UInt32] = [:]
        for step in 0 ..< 20_000 {
            let roll = Int.random(in: 0 ..< 10, using: &generator)
            if roll < 6 || expected.isEmpty {
                // A new id: time-ordered (counting up within a millisecond) or random.
                let id = roll % 2 == 0 ? time.make(milliseconds: Int64(step / 50)) : EntityID()
                let slot = UInt32(records.ids.count)
                records.ids.append(id)
                let found = index.findOrInsert(id, slot: slot, ids: records.id)
                #expect(found.inserted && found.slot == slot)
                expected[id] = slot
            } else if roll < 8 {
                let (id, slot) = expected.randomElement(using: &generator)!
                #expect(index.findOrInsert(id, slot: 0, ids: records.id) == (slot, false), "found, not inserted again")
            } else {
                let (id, slot) = expected.randomElement(using: &generator)!
                #expect(index.remove(id, ids: records.id) == slot)
                #expect(index.remove(id, ids: records.id) == nil, "removed once")
                expected[id] = nil
            }
            #expect(index.count == expected.count)
        }
        for (id, slot) in expected { #expect(index.find(id, ids: records.id) == slot) }
        #expect(index.find(EntityID(), ids: records.id) == nil)
    }

    @Test func reservingRoomKeepsEveryIdAndGrowsAtLeastTwofold() {
        var records = Records()
        var index = EntityIndex()
        for slot in 0 ..< 100 as Range<UInt32> {
            records.ids.append(EntityID())
            _ = index.findOrInsert(records.ids[Int(slot)], slot: slot, ids: records.id)
        }
        let before = index.capacity
        index.reserveCapacity(before + 1, ids: records.id)   // one past its room
        #expect(index.capacity >= 2 * before)
        index.reserveCapacity(10, ids: records.id)
        #expect(index.capacity >= 2 * before, "never shrinks")
        for (slot, id) in records.ids.enumerated() { #expect(index.find(id, ids: records.id) == UInt32(slot)) }
    }

    /// Growing reads no id: a cell's tag says its home (a world growing to a million
    /// entities regrows its index in one tick, and a read of an id there is a cache miss).
    /// Removals close their gaps the same way.
    @Test func growingAndClosingGapsReadNoId() {
        var records = Records()
        var index = EntityIndex()
        var reads = 0
        let counted = { (slot: UInt32) -> EntityID in reads += 1; return records.id(slot) }
        for slot in 0 ..< 5_000 as Range<UInt32> {
            records.ids.append(EntityID())
            _ = index.findOrInsert(records.ids[Int(slot)], slot: slot, ids: records.id)
        }
        // A third full: runs of several cells, whose gaps a removal closes.
        for slot in stride(from: 0, to: 5_000, by: 2) {
            #expect(index.remove(records.ids[slot], ids: counted) == UInt32(slot))
        }
        #expect(reads <= 2_500 + 5, "each removal reads its own id (and a rare tag alike), none to close its gap: \(reads)")
        reads = 0
        index.reserveCapacity(100_000, ids: counted)
        #expect(reads == 0, "grown from the tags")
        for (slot, id) in records.ids.enumerated() {
            #expect(index.find(id, ids: records.id) == (slot % 2 == 0 ? nil : UInt32(slot)))
        }
    }
}

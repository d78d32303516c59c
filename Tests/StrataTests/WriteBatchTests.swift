import Testing
@testable import Strata

@Suite struct WriteBatchTests {
    func write(_ entity: EntityNumber, _ x: Float) -> ComponentWrite {
        ComponentWrite(entity: entity, typeIndex: 0, typeName: Position.typeName, value: Position(x: x, y: 0))
    }

    @Test func newerWritesReplaceOlderOnesOfTheSameKey() {
        let a: EntityNumber = 1, b: EntityNumber = 2
        let older = WriteBatch()
        older.writes = [write(a, 1), write(b, 1)]
        let newer = WriteBatch()
        newer.writes = [write(a, 2)]
        newer.sequence = 7
        older.merge(newer: newer)
        #expect(older.writes.count == 2 && older.mergedWrites.count == 1,
                "the merge sets the newer writes aside (O(newer) on the tick thread); the writer coalesces")
        older.coalesce()
        #expect(older.writes.count == 2 && older.mergedWrites.isEmpty)
        #expect((older.writes[0].value as? Position)?.x == 2, "the key keeps its first position, with its newest value")
        #expect((older.writes[1].value as? Position)?.x == 1 && older.writes[1].entity == b)
        #expect(older.sequence == 7)
    }

    @Test func coalescingAfterSeveralMergesEqualsReplacingInPlace() {
        // Three batches of overlapping keys, merged then coalesced, against a model that
        // replaces in place: same keys, same order, newest values.
        var model: [(EntityNumber, Float)] = []
        let batch = WriteBatch()
        for (round, keys) in [[1, 2, 3], [2, 4], [4, 1, 5, 2]].enumerated() {
            let next = WriteBatch()
            next.writes = keys.map { write(EntityNumber($0), Float(round)) }
            for key in keys {
                if let i = model.firstIndex(where: { $0.0 == EntityNumber(key) }) { model[i].1 = Float(round) }
                else { model.append((EntityNumber(key), Float(round))) }
            }
            batch.merge(newer: next)
        }
        batch.coalesce()
        #expect(batch.writes.map(\.entity) == model.map(\.0))
        #expect(batch.writes.map { ($0.value as? Position)?.x } == model.map(\.1))
    }

    @Test func aNewerSettingWriteReplacesTheOlderOneOfItsKey() {
        let older = WriteBatch()
        older.settingWrites = [SettingWrite(key: "a", value: .integer(1)), SettingWrite(key: "b", value: .boolean(true))]
        let newer = WriteBatch()
        newer.settingWrites = [SettingWrite(key: "b", value: nil), SettingWrite(key: "c", value: .string("x"))]
        older.merge(newer: newer)
        #expect(older.settingWrites == [SettingWrite(key: "a", value: .integer(1)), SettingWrite(key: "b", value: nil),
                                        SettingWrite(key: "c", value: .string("x"))])
        #expect(older.rowCount == 3)
    }

    @Test func aDeleteDropsOlderWritesAndCancelsAnUnsavedInsert() {
        let saved: EntityNumber = 1, unsaved: EntityNumber = 2
        let older = WriteBatch()
        older.entityInserts = [EntityInsert(number: unsaved, id: EntityID())]
        older.writes = [write(saved, 1), write(unsaved, 1)]
        let newer = WriteBatch()
        newer.entityDeletes = [saved, unsaved]
        older.merge(newer: newer)
        #expect(older.entityInserts.isEmpty)
        #expect(older.entityDeletes == [saved])
        #expect(older.writes.isEmpty)
    }

    @Test func mergingKeepsTheStrongestDurabilityAndEveryReason() {
        let older = WriteBatch()
        older.reasons = [.derivedInterval]
        older.derivedDrainedAt = Instant(nanoseconds: 50)
        let newer = WriteBatch()
        newer.durability = .full
        newer.reasons = [.criticalDelay]
        newer.criticalDrainedAt = Instant(nanoseconds: 60)
        newer.derivedDrainedAt = Instant(nanoseconds: 70)
        older.merge(newer: newer)
        #expect(older.durability == .full)
        #expect(older.reasons == [.derivedInterval, .criticalDelay])
        #expect(older.drainedAt == [.critical: Instant(nanoseconds: 60), .derived: Instant(nanoseconds: 70)],
                "a merged batch covers each tier up to its latest drain")
    }

    @Test func manyMergesStayBoundedByDistinctKeys() {
        // A writer that takes nothing for 2,000 flushes of the same 10 keys: the merges
        // coalesce on their own once the appended writes pass the floor.
        let ids = (0 ..< 10).map { EntityNumber($0) }
        let batch = WriteBatch()
        var largest = 0
        for round in 0 ..< 2_000 {
            let next = WriteBatch()
            next.writes = ids.map { write($0, Float(round)) }
            batch.merge(newer: next)
            largest = max(largest, batch.writes.count + batch.mergedWrites.count)
        }
        #expect(largest <= ids.count + WriteBatch.mergedWritesFloor + ids.count, "bounded: \(largest)")
        batch.coalesce()
        #expect(batch.writes.count == 10)
        #expect(batch.writes.allSatisfy { ($0.value as? Position)?.x == 1_999 })
    }
}

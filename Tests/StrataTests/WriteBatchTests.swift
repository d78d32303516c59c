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
        #expect(older.writes.count == 2)
        #expect((older.writes[0].value as? Position)?.x == 2)
        #expect(older.sequence == 7)
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
        let ids = (0 ..< 10).map { EntityNumber($0) }
        let batch = WriteBatch()
        for round in 0 ..< 100 {
            let next = WriteBatch()
            next.writes = ids.map { write($0, Float(round)) }
            batch.merge(newer: next)
        }
        #expect(batch.writes.count == 10)
        #expect(batch.writes.allSatisfy { ($0.value as? Position)?.x == 99 })
    }
}

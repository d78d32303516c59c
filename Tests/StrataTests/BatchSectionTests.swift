import Foundation
import StrataCanvas
import Testing
@testable import Strata

/// The order of a batch's rows is stated once (``BatchSection``): the writer's parts write
/// in it, and the slices the rejection path commits follow it, set-aside writes included.
@Suite struct BatchSectionTests {
    @Test func theWritersPartsWriteTheSectionsInTheirOrder() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.writer.parts.flatMap(\.sections) == BatchSection.allCases)
    }

    @Test func theMetricsCountRowsPerKind() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        engine.world.spawn(Title("a"))
        engine.world.setSetting(.string("dark"), for: "theme")
        #expect(engine.flushNow())
        let rows = engine.metrics.rowsCommittedByKind
        #expect(rows["world"] == 2, "an entity row and its component: \(rows)")
        #expect(rows["settings"] == 1)
        #expect(rows["rejectedWrites"] == nil)
    }

    @Test func everySectionBelongsToAKindWithTables() {
        for section in BatchSection.allCases {
            #expect(!section.kind.tables.isEmpty, "\(section)")
        }
    }

    /// A batch with rows in every section, and component writes a merge set aside.
    func batch(seed: UInt64) -> WriteBatch {
        var rng = SplitMix64(seed: seed)
        let batch = WriteBatch()
        func some(_ most: Int) -> Int { Int.random(in: 0 ... most, using: &rng) }
        for n in 0 ..< some(4) { batch.entityDeletes.append(EntityNumber(1000 + n)) }
        for n in 0 ..< some(4) { batch.entityInserts.append(EntityInsert(number: EntityNumber(n + 1), id: EntityID())) }
        for n in 0 ..< some(3) { batch.settingWrites.append(SettingWrite(key: "k\(n)", value: .integer(Int64(n)))) }
        for n in 0 ..< some(3) { batch.peerAcks.append(PeerAck(peer: NodeID(), node: NodeID(), seq: Int64(n))) }
        for n in 0 ..< some(3) { batch.vectorClockRows[NodeID()] = Int64(n) }
        for n in 0 ..< some(2) { batch.replayedRejections.append(Int64(n)) }
        func write(_ entity: Int, _ x: Float) -> ComponentWrite {
            ComponentWrite(entity: EntityNumber(entity), typeIndex: 0, typeName: Position.typeName, value: Position(x: x, y: 0))
        }
        for n in 0 ..< some(4) { batch.writes.append(write(n, Float(n))) }   // one write per key, as a drain leaves them
        let newer = WriteBatch()
        for n in 0 ..< some(6) { newer.writes.append(write(n % 5, Float(100 + n))) }
        batch.merge(newer: newer)
        return batch
    }

    @Test func slicesOfAPartitionInOrderAreTheBatch() {
        for seed in 0 ..< 200 as Range<UInt64> {
            let whole = batch(seed: seed)
            let reference = WriteBatch()   // the same rows, the set-aside writes folded in
            reference.merge(newer: whole)
            reference.coalesce()
            let total = reference.rowCount
            var rng = SplitMix64(seed: seed &+ 7)
            var cuts = (0 ..< Int.random(in: 0 ... 4, using: &rng)).map { _ in Int.random(in: 0 ... total, using: &rng) }
            cuts = ([0, total] + cuts).sorted()
            let slices = zip(cuts, cuts.dropFirst()).map { whole.slice($0 ..< $1) }
            #expect(slices.map(\.rowCount).reduce(0, +) == total, "seed \(seed): every row once, set-aside writes folded in")
            #expect(slices.flatMap(\.entityDeletes) == reference.entityDeletes)
            #expect(slices.flatMap(\.entityInserts) == reference.entityInserts)
            #expect(slices.flatMap(\.settingWrites) == reference.settingWrites)
            #expect(slices.flatMap(\.replayedRejections) == reference.replayedRejections)
            #expect(slices.flatMap(\.writes).map { [$0.entity, EntityNumber(($0.value as! Position).x)] }
                == reference.writes.map { [$0.entity, EntityNumber(($0.value as! Position).x)] }, "seed \(seed)")
            #expect(Dictionary(slices.flatMap(\.vectorClockRows), uniquingKeysWith: { a, _ in a }) == reference.vectorClockRows)
        }
    }

    /// Parked rows go back where they came from: each section's rejected rows name it.
    @Test func rejectedRowsNameTheSectionTheyCameFrom() {
        let whole = batch(seed: 3)
        whole.operations.append(LoggedOperation(node: NodeID(), seq: 1, timestamp: HybridTimestamp(rawValue: 1),
                                                kind: "test.op", payload: [1]))
        whole.coalesce()
        var seen = Set<BatchSection>()
        for section in BatchSection.allCases {
            let rows = section.rejected(in: whole, now: 0, error: "refused", entityID: { _ in EntityID() })
            #expect(rows.count == (section == .replayedRejections ? 0 : section.count(in: whole)), "\(section)")
            for row in rows {
                #expect(row.kind.section == section, "\(row.kind) from \(section)")
                seen.insert(section)
            }
        }
        #expect(seen.contains(.operations) && seen.contains(.components))
    }
}

import Foundation
import GRDB
import Testing
@testable import Strata

/// Moving values written to the segment log coded against their previous payload
/// (``XorCoding``): fewer bytes, read back bit-exact, and never decoded against a wrong base.
@Suite struct CodedRecordsTests {
    /// `count` positions, each flush moving x a little: the values of every flush.
    func moveAndFlush(_ engine: Engine, _ entities: [Entity], flushes: Int) -> [[Position]] {
        var written: [[Position]] = []
        for flush in 1 ... flushes {
            var values: [Position] = []
            for (i, entity) in entities.enumerated() {
                var value = Position(x: Float(i) + Float(flush) * 0.25, y: 3)
                if i == 0 { value.x = Float(bitPattern: 0x7FC0_0000 | UInt32(flush)) }   // a NaN with a payload
                if i == 1 { value.y = flush % 2 == 0 ? -0.0 : 0.0 }
                engine.world.insert(value, for: entity)
                values.append(value)
            }
            #expect(engine.flushNow())
            written.append(values)
        }
        return written
    }

    /// A document of `count` positions spawned, then moved and flushed `flushes` times:
    /// their ids and the values of every flush.
    func document(_ fixture: EngineFixture, count: Int, flushes: Int) throws -> (ids: [EntityID], written: [[Position]]) {
        let engine = try fixture.open()
        let entities = (0 ..< count).map { engine.world.spawn(Position(x: Float($0), y: 3)) }
        #expect(engine.flushNow())
        let written = moveAndFlush(engine, entities, flushes: flushes)
        let ids = entities.compactMap { engine.world.id(of: $0) }
        try engine.shutdown()
        return (ids, written)
    }

    func segmentBytes(_ fixture: EngineFixture) throws -> [Int] {
        let queue = try fixture.reader()
        defer { try? queue.close() }
        return try queue.read { try Int.fetchAll($0, sql: "SELECT length(records) FROM segments ORDER BY id") }
    }

    func bits(_ p: Position?) -> [UInt32]? { p.map { [$0.x.bitPattern, $0.y.bitPattern] } }

    @Test func movingValuesCostAFewBytesAndReloadBitExact() throws {
        let fixture = EngineFixture()
        let ids: [EntityID]
        let written: [[Position]]
        do {
            let engine = try fixture.open()
            let entities = (0 ..< 500).map { engine.world.spawn(Position(x: Float($0), y: 3)) }
            #expect(engine.flushNow())
            let before = engine.metrics.payloadBytesWritten
            written = moveAndFlush(engine, entities, flushes: 6)
            // The payload counted is the values' (8 bytes a position), not the bases coded against.
            #expect(engine.metrics.payloadBytesWritten - before == 6 * 500 * 8)
            ids = entities.compactMap { engine.world.id(of: $0) }
            try engine.shutdown()
        }
        let rows = try segmentBytes(fixture)
        #expect(rows.count >= 7)
        // A position whole takes 8 bytes and its entity's delta; coded, x moved by a quarter: ~5.
        #expect(try #require(rows.last) < 500 * 6, "\(rows)")

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.loaded.unreadableSegments == 0)
        for (i, id) in ids.enumerated() {
            let entity = try #require(engine.world.entity(for: id))
            #expect(bits(engine.world.get(Position.self, for: entity)) == bits(written[5][i]), "entity \(i)")
        }
    }

    /// Compaction folds the front of the log into the base rows: a coded record after it
    /// then finds its base there. Folded one row at a time, the world reloads the same.
    @Test func recordsCodedAgainstAFoldedRowReadAgainstItsBaseRow() throws {
        let fixture = EngineFixture()
        let (ids, written) = try document(fixture, count: 200, flushes: 4)
        let store = try Store(location: StoreLocation(path: fixture.directory.databasePath))
        try store.withConnection { db in
            let endID = try Int64.fetchOne(db, sql: "SELECT max(id) FROM segments") ?? 0
            let round = Compactor.Round(method: .fold, endID: endID)
            try db.inTransaction {
                _ = try Compactor.step(round, budgetBytes: 1, db)   // the first rows only
                return .commit
            }
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM segments") ?? 0 >= 3)
        }
        try store.close()

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.loaded.unreadableSegments == 0)
        for (i, id) in ids.enumerated() {
            let entity = try #require(engine.world.entity(for: id))
            #expect(bits(engine.world.get(Position.self, for: entity)) == bits(written[3][i]), "entity \(i)")
        }
        #expect(engine.compactNow())
    }

    /// A row lost from the middle of the log (as damage would): the records coded against
    /// it are unresolved, skipped and reported, and the rest of their rows read; a component
    /// keeps a value it had, never one decoded against the wrong base.
    @Test func aLostRowLeavesTheRecordsCodedAgainstItUnresolvedNotWrong() throws {
        let fixture = EngineFixture()
        let (ids, written) = try document(fixture, count: 100, flushes: 4)
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM segments ORDER BY id")
            try db.execute(sql: "DELETE FROM segments WHERE id = ?", arguments: [ids[2]])   // the second flush's moves
        }
        try queue.close()

        let engine = try fixture.open()
        #expect(engine.recovery.loaded.unreadableSegments == 0)
        let unresolved = engine.recovery.loaded.unresolvedRecords
        #expect(unresolved >= 100, "\(engine.recovery.loaded)")
        var keptTheFirst = 0
        for (i, id) in ids.enumerated() {
            let entity = try #require(engine.world.entity(for: id))
            let value = bits(engine.world.get(Position.self, for: entity))
            #expect(value != bits(written[1][i]), "entity \(i): the lost row's value")
            #expect([0, 2, 3].contains { bits(written[$0][i]) == value }, "entity \(i): a value it had")
            if value == bits(written[0][i]) { keptTheFirst += 1 }
        }
        #expect(keptTheFirst >= 50)
        try engine.shutdown()

        // Compaction cannot decode them either: they go with their rows, counted (and logged).
        let store = try Store(location: StoreLocation(path: fixture.directory.databasePath))
        defer { try? store.close() }
        let dropped = try store.withConnection { db in
            let endID = try Int64.fetchOne(db, sql: "SELECT max(id) FROM segments") ?? 0
            var result = Compactor.StepResult()
            try db.inTransaction {
                result = try Compactor.step(Compactor.Round(method: .fold, endID: endID), budgetBytes: 1 << 30, db)
                return .commit
            }
            return result.unresolvedDropped
        }
        #expect(dropped == unresolved)
    }
}

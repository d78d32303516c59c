import Foundation
import GRDB
import Testing
@testable import Strata

/// A row whose overflow page is damaged still reads, with the damage in its values; when
/// one of them then fails a constraint of the new file, the salvage parks the row as it
/// read instead of losing it.
@Suite struct SalvageParkingTests {
    @Test func aRowTheNewFileRefusesIsParkedAsItReadNotLost() throws {
        let fixture = EngineFixture()
        let entity: EntityID
        do {
            let engine = try fixture.open()
            entity = try #require(engine.world.id(of: engine.world.spawn(Title("with a job"))))
            #expect(engine.flushNow())
            // A payload over a page: the row's last columns (status among them) go on its overflow pages.
            _ = try engine.jobs.enqueue("render", for: entity, payload: [UInt8](repeating: 7, count: 3000), timeout: .seconds(30))
            try engine.shutdown()
        }
        let path = fixture.directory.databasePath
        let queue = try DatabaseQueue(path: path)
        let (page, pageSize) = try queue.writeWithoutTransaction { db -> (Int, Int) in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            let pages = try Int.fetchAll(db, sql: "SELECT pageno FROM dbstat WHERE name = 'jobs' AND pagetype = 'overflow' ORDER BY pageno")
            return (try #require(pages.last), try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 512)
        }
        try queue.close()
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64((page - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: pageSize))
        try handle.close()

        var fixtureAgain = fixture
        fixtureAgain.config.maintenance.startCheckAge = .milliseconds(1)   // the damage is found at this start
        let engine = try fixtureAgain.open()
        defer { try? engine.shutdown() }
        let salvage = try #require(engine.recovery.salvage)
        #expect(salvage.parked["jobs"] == 1, "\(salvage.description)")
        #expect(salvage.lostAtMost["jobs"] == nil, "\(salvage.description)")
        #expect(salvage.description.contains("parked in rejected_writes: 1 in jobs"), "\(salvage.description)")
        let parked = try engine.rejectedWrites().filter { $0.kind == .salvagedRow }
        #expect(parked.count == 1)
        let row = try #require(parked.first)
        #expect(row.name == "jobs")
        #expect(row.error.contains("CHECK"), "\(row.error)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(row.payload ?? [])) as? [String: Any])
        #expect(object["kind"] as? String == "render")
        #expect(object["id"] as? Int == Int(row.number ?? -1))
        // Never replayed: it stays parked, and says why.
        let replay = try engine.replayRejectedWrites()
        #expect(replay.replayed == 0)
        #expect(replay.kept.contains { $0.contains("salvage read from a damaged file") }, "\(replay.kept)")
        #expect(try engine.rejectedWrites().filter { $0.kind == .salvagedRow }.count == 1)
    }
}

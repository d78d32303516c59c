import Foundation
import GRDB
import GRDBSQLite
import Testing
@testable import Strata

/// Backups made from outside the owner's process, scheduled backups, and restores.
@Suite struct RestoreTests {
    func populate(_ engine: Engine, count: Int = 200) -> [Entity] {
        let entities = (0 ..< count).map { engine.world.spawn(Title("title \($0)")) }
        #expect(engine.flushNow())
        return entities
    }

    @Test func aToolCopiesARunningDocumentAsOfOneCommit() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entities = populate(engine)
        let asset = try engine.assets.write([9, 9], for: engine.world.id(of: entities[0]))
        let destination = fixture.directory.url.appendingPathComponent("tool.db").path
        // The engine owns the document and goes on writing; the copy is made by a connection of its own.
        let report = try Backup.copy(from: engine.store.location.path, to: destination)
        engine.world.insert(Title("after the copy"), for: entities[1])
        #expect(engine.flushNow())
        #expect(report.integrity == "ok")
        #expect(report.assetsLinked + report.assetsCopied == 1)
        let copy = try PersistedComponents.read(destination)
        #expect(copy.count(Title.self) == entities.count)
        #expect(copy.count(Title("after the copy")) == 0)
        #expect(FileManager.default.fileExists(atPath: StoreLocation(path: destination).assetsPath + "/" + asset.name))
        try engine.shutdown()

        #expect(throws: StoreError.self, "not a Strata document") {
            let foreign = fixture.directory.url.appendingPathComponent("foreign.db").path
            let queue = try DatabaseQueue(path: foreign)
            try queue.write { try $0.execute(sql: "CREATE TABLE mine (x)") }
            try queue.close()
            _ = try Backup.copy(from: foreign, to: foreign + ".backup")
        }
    }

    @Test func aToolCopiesAnIdleDocumentWithWhatItsWALHolds() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let ids = populate(engine).compactMap { engine.world.id(of: $0) }
        try engine.shutdown()
        // Another connection (no engine: nobody has the owner lock) left a commit in the WAL.
        var other: OpaquePointer?
        sqlite3_open_v2(fixture.directory.databasePath, &other, SQLITE_OPEN_READWRITE, nil)
        defer { sqlite3_close_v2(other) }
        sqlite3_exec(other, "PRAGMA wal_autocheckpoint = 0; UPDATE session_state SET crash_count = 41", nil, nil, nil)
        #expect(StoreLocation(path: fixture.directory.databasePath).walBytes > 0)

        let destination = fixture.directory.url.appendingPathComponent("idle.db").path
        let report = try Backup.copy(from: fixture.directory.databasePath, to: destination)
        #expect(report.integrity == "ok")
        #expect(!FileManager.default.fileExists(atPath: destination + "-wal"), "one file: the WAL folded into it")
        #expect(try PersistedComponents.read(destination).count(Title.self) == ids.count)
        let copied = try DatabaseInspection.inspect(path: destination)
        #expect(copied.crashCount == 41, "the WAL's commit is in the copy")
        #expect(copied.cleanShutdown == true)
        #expect(StoreLocation(path: fixture.directory.databasePath).walBytes > 0, "the source is as it was")
    }

    @Test func aRestoreRefusesAnOpenDocumentAndSetsAsideWhatItReplaces() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entities = populate(engine)
        let originalNode = engine.nodeID
        let made = (0 ..< 3).map { engine.appendOperation(kind: "shape.create", payload: [UInt8($0)]) }
        let backup = fixture.directory.url.appendingPathComponent("b.db").path
        try engine.backup(to: backup)
        // The original had pushed its three operations to a server.
        let edited = try DatabaseQueue(path: backup)
        try edited.write { db in try db.execute(sql: "INSERT INTO sync_state (id, server, pushed_through) VALUES (1, 'test', 3)") }
        try edited.close()
        engine.world.insert(Title("after the backup"), for: entities[0])
        #expect(engine.flushNow())
        let document = engine.store.location.path

        #expect(throws: StoreError.self, "the document is open") { try Backup.restore(from: backup, to: document, replacing: true) }
        try engine.shutdown()
        #expect(throws: StoreError.self, "a document is there") { try Backup.restore(from: backup, to: document) }
        #expect(try fixture.persisted().count(Title("after the backup")) == 1, "refused: untouched")

        let report = try Backup.restore(from: backup, to: document, replacing: true)
        let aside = try #require(report.setAside)
        #expect(try PersistedComponents.read(aside).count(Title("after the backup")) == 1, "set aside whole, WAL and all")
        #expect(FileManager.default.fileExists(atPath: backup), "the backup stays a backup")

        let restored = try fixture.open()
        #expect(restored.recovery.session.previous == .clean)
        #expect(restored.world.count(of: Title.self) == entities.count)
        #expect(restored.world.id(of: entities[0]).map { try? PersistedComponents.read(document).value(Title.self, of: $0) } != nil)
        #expect(restored.nodeID != originalNode, "a new node: its operations cannot collide with the original's")
        #expect(restored.nodeID.description == report.node)
        #expect(restored.vectorClock[originalNode] == 3, "the backup's operations are the original node's, received")
        #expect(restored.world.operationLog.nextSequence == 1, "the new node starts its own sequence")
        let (local, received) = try restored.store.withConnection { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM local_operations") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM received_operations WHERE node = ?", arguments: [originalNode.withBytes { Data($0) }]) ?? 0)
        }
        #expect(local == 0 && received == 3)
        // Stored without their ids (made from the node and the sequence): received with them.
        #expect(try OperationLogReader(path: document).operations(of: originalNode) == made)
        #expect(try restored.store.withConnection { try Int.fetchOne($0, sql: "SELECT pushed_through FROM sync_state") } == 0,
                "the new node's operations are all still to push")
        try restored.shutdown()
        #expect(try fixture.persisted().count(Title("after the backup")) == 0)
        #expect(try fixture.persisted().count(Title("title 0")) == 1)
    }

    /// A damaged backup is refused by name before anything is made at the destination: no
    /// raw SQLite error, no `DEST.lock` left behind.
    @Test func aDamagedBackupIsRefusedAndLeavesNothingAtTheDestination() throws {
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 3000)
        let backup = fixture.directory.url.appendingPathComponent("backup.db").path
        _ = try Backup.copy(from: fixture.directory.databasePath, to: backup)
        try damageLeafPage(of: "entities", skip: 2, in: backup)
        let destination = fixture.directory.url.appendingPathComponent("restored.db").path
        let run = try ChildProcess.strata(["restore", backup, destination])
        #expect(run.status != 0)
        #expect(run.stderr.contains("the backup is damaged") && run.stderr.contains("nothing was restored"), "\(run.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path).filter { $0.hasPrefix("restored.db") || $0.hasPrefix(".restored.db") }
        #expect(left.isEmpty, "\(left)")
    }

    /// A restore reads the backup only: one whose WAL still holds commits (a copy of a
    /// document that crashed) keeps its WAL and its file byte for byte.
    @Test func aRestoreLeavesABackupWithAWALAsItIs() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        _ = populate(engine)
        let copy = fixture.directory.url.appendingPathComponent("crashed.db").path
        let location = StoreLocation(path: fixture.directory.databasePath)
        try FileManager.default.copyItem(atPath: location.path, toPath: copy)
        try FileManager.default.copyItem(atPath: location.walPath, toPath: copy + "-wal")
        try engine.shutdown()
        let before = [try Data(contentsOf: URL(fileURLWithPath: copy)), try Data(contentsOf: URL(fileURLWithPath: copy + "-wal"))]
        #expect(before[1].count > 0, "the WAL holds the commits")
        let destination = fixture.directory.url.appendingPathComponent("restored.db").path
        _ = try Backup.restore(from: copy, to: destination)
        let after = [try Data(contentsOf: URL(fileURLWithPath: copy)), try Data(contentsOf: URL(fileURLWithPath: copy + "-wal"))]
        #expect(after == before, "the backup and its WAL are as they were")
        #expect(try PersistedComponents.read(destination).count(Title.self) == 200)
    }

    @Test func scheduledBackupsFollowThePowerAndKeepTheNewest() throws {
        var fixture = EngineFixture()
        let wall = TestWallClock()
        fixture.options.wallClock = { wall.milliseconds }
        fixture.config.backup.keep = 2
        fixture.config.backup.interval = .seconds(600)
        fixture.config.backup.batteryInterval = .zero   // never on battery
        let engine = try fixture.open()
        _ = populate(engine, count: 50)
        let folder = BackupFolder(document: engine.store.location, folder: "")
        func made() -> Int { engine.metrics.backupsCompleted }

        engine.powerState = .discharging(80)
        fixture.clock.advance(by: .seconds(20))   // a deciding end of tick: the writer is told the power
        engine.endTick()
        #expect(engine.flushNow())   // the writer has seen the battery and taken a batch since
        #expect(made() == 0, "never on battery")

        engine.powerState = .charging(80)
        fixture.clock.advance(by: .seconds(20))
        engine.endTick()
        #expect(eventually { made() == 1 }, "the first on mains at once")
        #expect(engine.flushNow())
        #expect(made() == 1, "not again within the interval")
        for expected in 2 ... 4 {
            wall.advance(by: .seconds(601))
            engine.world.spawn(Title("backup \(expected)"))
            #expect(engine.flushNow())
            #expect(eventually { made() == expected })
        }
        #expect(eventually { folder.backups().count == 2 }, "keep = 2")
        let newest = try #require(folder.backups().last)
        #expect(try PersistedComponents.read(newest.path).count(Title("backup 4")) == 1)
        #expect(newest.unixMilliseconds == wall.milliseconds)
        try engine.shutdown()

        // A crash in the middle of one leaves a hidden partial copy: the next open sweeps it.
        let partial = folder.path + "/." + folder.stem + "-x.db" + BackupTarget.partialMarker + "1"
        try #require(FileManager.default.createFile(atPath: partial, contents: Data([1])))
        let reopened = try fixture.open()
        #expect(!FileManager.default.fileExists(atPath: partial))
        try reopened.shutdown()
    }

    /// A new document's first scheduled backup waits for its first commit (taken at open it
    /// held nothing, and was the only backup for a whole interval); an idle document is not
    /// copied again when the interval has passed with nothing committed.
    @Test func aScheduledBackupWaitsForSomethingCommittedSinceTheLast() throws {
        var fixture = EngineFixture()
        let wall = TestWallClock()
        fixture.options.wallClock = { wall.milliseconds }
        fixture.config.backup.keep = 5
        fixture.config.backup.interval = .seconds(600)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        func made() -> Int { engine.metrics.backupsCompleted }
        engine.powerState = .charging(80)
        for _ in 0 ..< 3 {
            fixture.clock.advance(by: .seconds(20))
            engine.endTick()
        }
        #expect(engine.waitForWriter())
        #expect(made() == 0, "nothing committed yet: no backup of an empty document")
        _ = populate(engine, count: 20)
        fixture.clock.advance(by: .seconds(20))
        engine.endTick()
        #expect(eventually { made() == 1 }, "the first commit makes the first backup due")
        let folder = BackupFolder(document: engine.store.location, folder: "")
        let first = try #require(folder.backups().first)
        #expect(try PersistedComponents.read(first.path).count(Title.self) == 20)
        wall.advance(by: .seconds(601))
        fixture.clock.advance(by: .seconds(20))
        engine.endTick()
        #expect(engine.waitForWriter())
        #expect(made() == 1, "nothing committed since: not copied again")
    }

    @Test func backupConfigIsCheckedByKey() throws {
        func error(_ toml: String) -> String? {
            do {
                _ = try StrataConfig.parse(toml, source: "test.toml")
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(error("[backup]\ninterval_secs = 600\nbattery_interval_secs = 60")?.contains("backup.battery_interval_secs") == true)
        #expect(error("[backup]\nkeep = -1")?.contains("backup.keep") == true)
        // A schedule, not a copy loop: 0.001 s with keep = 10000 wrote 3 GB a minute.
        #expect(error("[backup]\ninterval_secs = 0.001")?.contains("backup.interval_secs: must be at least 1 second") == true)
        #expect(error("[backup]\nkeep = 10000")?.contains("backup.keep") == true)
        #expect(error("[backup]\nkep = 3")?.contains("kep") == true)
        let config = try StrataConfig.parse("[backup]\nkeep = 3\nbattery_interval_secs = 0\nfolder = \"/tmp/b\"")
        #expect(config.backup.keep == 3 && config.backup.batteryInterval == .zero && config.backup.folder == "/tmp/b")
        #expect(try StrataConfig.parse(config.renderTOML()).backup == config.backup)
    }
}

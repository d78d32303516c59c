import Foundation
import GRDB
import GRDBSQLite
import Synchronization
import Testing
@testable import Strata
import StrataTesting

/// Backups of running documents, on real files and the real writer thread; restores.
@Suite struct BackupTests {
    /// An engine with `count` titled entities, committed. Returns them.
    func populate(_ engine: Engine, count: Int = 2000) -> [Entity] {
        let entities = (0 ..< count).map { engine.world.spawn(Title("title \($0)"), Position(x: Float($0), y: 1)) }
        #expect(engine.flushNow())
        return entities
    }

    /// Starts `request` and waits for its result (a thread of the backup's own calls back).
    func run(_ engine: Engine, _ request: BackupRequest) throws -> Result<BackupReport, any Error> {
        let result = Mutex<Result<BackupReport, any Error>?>(nil)
        var request = request
        let completion = request.completion
        request = BackupRequest(target: request.target, scheduled: request.scheduled, vfs: request.vfs) { outcome in
            completion(outcome)
            result.withLock { $0 = outcome }
        }
        request.pagesPerStep = 16
        try engine.startBackup(request)
        #expect(eventually { result.withLock { $0 != nil } })
        return try #require(result.withLock { $0 })
    }

    func leftovers(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.contains(BackupTarget.partialMarker) }
    }

    /// A reader of another connection with a read transaction open at the commit it began
    /// at (as `strata inspect` would have): no checkpoint can copy the WAL past it.
    final class OldSnapshot {
        private var handle: OpaquePointer?

        init(_ path: String) {
            sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY, nil)
            sqlite3_exec(handle, "BEGIN; SELECT count(*) FROM entities;", nil, nil, nil)
        }

        func close() {
            sqlite3_exec(handle, "COMMIT", nil, nil, nil)
            sqlite3_close_v2(handle)
            handle = nil
        }
    }

    @Test func withAnOlderSnapshotOpenThePagesAreCopiedAndTheBackupIsAsOfItsLastStep() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entities = populate(engine)
        let destination = fixture.directory.url.appendingPathComponent("copies/backup.db").path
        let reader = OldSnapshot(engine.store.location.path)
        engine.world.insert(Title("after the reader began"), for: entities[6])
        #expect(engine.flushNow())   // the WAL now holds a commit the reader's snapshot does not

        // The writer is held after the first step while a batch is handed: it commits between two steps.
        let held = try HeldBackup(engine, to: destination)
        let go = held.go
        engine.world.insert(Title("changed during the backup", revision: 1), for: entities[7])
        engine.world.despawn(entities[8])
        fixture.clock.advance(by: .seconds(2))
        engine.endTick()   // the critical delay is past: the batch is handed, not waited for
        go.signal()
        #expect(eventually { held.result.withLock { $0 != nil } })
        let report = try #require(held.result.withLock { $0 }).get()
        #expect(report.steps > 2, "16 pages at first: several steps")
        #expect(report.integrity == "ok")
        #expect(report.destination == StoreLocation(path: destination).path)
        #expect(leftovers(in: URL(fileURLWithPath: destination).deletingLastPathComponent()).isEmpty)

        let copy = try PersistedComponents.read(destination)
        let id7 = try #require(engine.world.id(of: entities[7])), id0 = try #require(engine.world.id(of: entities[0]))
        #expect(try copy.value(Title.self, of: id7) == Title("changed during the backup", revision: 1),
                "the batch committed between two steps is in the copy")
        reader.close()
        #expect(try copy.value(Title.self, of: id0) == Title("title 0"))
        #expect(copy.count(Title.self) == entities.count - 1)
        #expect(copy.count(Position.self) == entities.count - 1)

        // A complete document of its own: it opens clean, and the source goes on.
        var other = EngineFixture()
        other.config.database.path = destination
        let reopened = try other.open()
        #expect(reopened.recovery.session.previous == .clean)
        #expect(reopened.world.count(of: Title.self) == entities.count - 1)
        try reopened.shutdown()
        engine.world.insert(Title("after the backup"), for: entities[9])
        #expect(engine.flushNow())
        try engine.shutdown()
        #expect(try fixture.persisted().count(Title("after the backup")) == 1)
        #expect(try PersistedComponents.read(destination).count(Title("after the backup")) == 0)
    }

    @Test func backupWaitsForTheWorldAsItIsAndTakesTheAssetsAndParkedRows() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entity = engine.world.spawn(Title("with a thumbnail"))
        #expect(engine.flushNow())
        let asset = try engine.assets.write([1, 2, 3, 4], for: engine.world.id(of: entity), fileExtension: "png")
        engine.world.insert(Title("not flushed yet"), for: entity)   // backup(to:) flushes first
        let destination = fixture.directory.url.appendingPathComponent("b.db").path
        let report = try engine.backup(to: destination)
        #expect(report.assetsLinked + report.assetsCopied == 1)
        #expect(report.assetsMissing.isEmpty)
        #expect(try PersistedComponents.read(destination).count(Title("not flushed yet")) == 1)
        let copied = StoreLocation(path: destination).assetsPath + "/" + asset.name
        #expect(FileManager.default.contents(atPath: copied) == Data([1, 2, 3, 4]))
        #expect(engine.metrics.backupsCompleted == 1)
        try engine.shutdown()
    }

    /// A backup killed before its copy was named (SIGKILL, SIGTERM) leaves `.NAME.partial-PID-ID`
    /// and its assets: the next backup into the folder removes those of a process that is
    /// gone, never one still at work.
    @Test func temporaryCopiesOfAProcessThatIsGoneAreRemovedByTheNextBackup() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        _ = populate(engine, count: 20)
        try engine.shutdown()
        let folder = TestDirectory()
        let exited = Process()
        exited.executableURL = URL(fileURLWithPath: "/bin/true")
        try exited.run()
        exited.waitUntilExit()
        let gone = exited.processIdentifier
        let abandoned = folder.url.appendingPathComponent(".old.db.partial-\(gone)-0f0e0d0c-0b0a-0908-0706-050403020100").path
        let working = folder.url.appendingPathComponent(".other.db.partial-\(getpid())-00000000-0000-0000-0000-000000000001").path
        for path in [abandoned, abandoned + "-wal", working] { try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path)) }
        try FileManager.default.createDirectory(atPath: abandoned + ".assets", withIntermediateDirectories: true)

        _ = try Backup.copy(from: fixture.directory.databasePath, to: folder.url.appendingPathComponent("new.db").path)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
        #expect(!names.contains { $0.hasPrefix(".old.db.partial-") }, "\(names)")
        #expect(names.contains { $0.hasPrefix(".other.db.partial-") }, "a copy whose process runs is left alone: \(names)")
        #expect(names.contains("new.db"))
    }

    @Test func aBackupNeverReplacesAFileNorWritesOverTheDocument() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        _ = populate(engine, count: 10)
        let source = engine.store.location.path
        let taken = fixture.directory.url.appendingPathComponent("taken.db").path
        try #require(FileManager.default.createFile(atPath: taken, contents: Data("mine".utf8)))
        for destination in [taken, source, source + "-wal", source + ".assets", "/proc/strata-backup.db"] {
            #expect(throws: StoreError.self, "\(destination)") { try engine.backup(to: destination) }
        }
        #expect(FileManager.default.contents(atPath: taken) == Data("mine".utf8))
        #expect(leftovers(in: fixture.directory.url).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: "/proc/strata-backup.db"))
        #expect(engine.flushNow())
        try engine.shutdown()
        #expect(try fixture.persisted().count(Title.self) == 10)
    }

    @Test func aFullDiskFailsTheBackupAndLeavesNothingUnderItsName() throws {
        let vfs = try FaultVFS.register(name: "backup-full-\(UUID().uuidString.prefix(8))")
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entities = populate(engine)
        let destination = fixture.directory.url.appendingPathComponent("full.db").path
        vfs.arm(.write, nth: 5, code: SQLITE_FULL, persistent: true)
        let request = BackupRequest(target: try BackupTarget(source: engine.store.location, destination: destination),
                                    vfs: vfs.name) { _ in }
        let result = try run(engine, request)
        #expect(throws: StoreError.self) { try result.get() }
        #expect(!FileManager.default.fileExists(atPath: destination))
        #expect(leftovers(in: fixture.directory.url).isEmpty)
        #expect(engine.metrics.backupsFailed == 1)

        // The source is untouched and goes on; a later backup (the disk freed) works.
        vfs.disarm()
        engine.world.insert(Title("after the failure"), for: entities[0])
        #expect(engine.flushNow())
        let report = try engine.backup(to: destination)
        #expect(report.integrity == "ok")
        try engine.shutdown()
        #expect(try fixture.persisted().count(Title("after the failure")) == 1)
        #expect(try PersistedComponents.read(destination).count(Title.self) == entities.count)
    }

    @Test func aShutdownDuringABackupFailsItAndLeavesNoPartialFile() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        _ = populate(engine)
        let destination = fixture.directory.url.appendingPathComponent("cut.db").path
        let held = try HeldBackup(engine, to: destination)
        let go = held.go
        go.signal()
        try engine.shutdown()
        let outcome = try #require(held.result.withLock { $0 })
        if case .success = outcome {
            #expect(FileManager.default.fileExists(atPath: destination), "finished before the shutdown: named")
        } else {
            #expect(!FileManager.default.fileExists(atPath: destination))
        }
        #expect(leftovers(in: fixture.directory.url).isEmpty)
    }
    @Test func aCopyOfTheFileHoldsCheckpointsAndIsTheDocumentAsOfItsStart() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entities = populate(engine)
        let destination = fixture.directory.url.appendingPathComponent("file.db").path
        let held = try HeldBackup(engine, to: destination)
        let go = held.go
        // Handed while the writer is held after the first step, committed before the next: a
        // change, a despawn, and a level loaded (a batch past WriteBatch.bulkRows, which would
        // leave WAL mode and write the file). While the file is copied they go to the WAL only.
        engine.world.insert(Title("changed during the backup", revision: 1), for: entities[7])
        engine.world.despawn(entities[8])
        for i in 0 ..< WriteBatch.bulkRows { engine.world.spawn(Position(x: Float(i), y: 2)) }
        fixture.clock.advance(by: .seconds(60))
        engine.endTick()
        go.signal()
        #expect(eventually { held.result.withLock { $0 != nil } })
        let report = try #require(held.result.withLock { $0 }).get()
        #expect(report.integrity == "ok")
        #expect(report.steps > 2, "16 pages' worth at first: several steps")

        let copy = try PersistedComponents.read(destination)
        let id7 = try #require(engine.world.id(of: entities[7]))
        #expect(try copy.value(Title.self, of: id7) == Title("title 7"), "the copy is the file as of its start")
        #expect(copy.count(Title.self) == entities.count)
        #expect(copy.count(Position.self) == entities.count)
        #expect(engine.flushNow())
        #expect(engine.metrics.bulkCommits == 0, "no rollback journal while the file was copied")
        try engine.shutdown()
        #expect(try fixture.persisted().count(Position.self) == entities.count - 1 + WriteBatch.bulkRows)
        #expect(try fixture.persisted().count(Title("changed during the backup", revision: 1)) == 1)
    }

    @Test(.enabled(if: TortureTests.canMountTmpfs, "a real full disk needs a tmpfs, and mounting one needs root"))
    func aRealFullDiskOrReadOnlyFolderFailsTheBackupAndLeavesNothing() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entities = populate(engine, count: 5000)   // a file larger than the disk below
        let full = fixture.directory.url.appendingPathComponent("full").path
        try FileManager.default.createDirectory(atPath: full, withIntermediateDirectories: true)
        _ = try ChildProcess.run("/usr/bin/env", ["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", full])
        defer { _ = try? ChildProcess.run("/usr/bin/env", ["umount", full]) }
        #expect(throws: StoreError.self, "a disk too small") { try engine.backup(to: full + "/b.db") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: full).isEmpty, "nothing left, partial or not")

        let readOnly = fixture.directory.url.appendingPathComponent("read-only").path
        let plain = fixture.directory.url.appendingPathComponent("plain").path
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        if StoreTests.mountReadOnly(plain, at: readOnly) {
            defer { StoreTests.unmount(readOnly) }
            #expect(throws: StoreError.self, "a read-only folder") { try engine.backup(to: readOnly + "/b.db") }
            #expect(try FileManager.default.contentsOfDirectory(atPath: plain).isEmpty)
        }
        engine.world.insert(Title("after"), for: entities[0])
        #expect(engine.flushNow())
        try engine.shutdown()
        #expect(try fixture.persisted().count(Title.self) == entities.count)
    }
}

/// A backup whose writer is held after its first step (16 pages), so that a test hands a
/// batch, or shuts down, between two steps; `go` lets it on. Its outcome lands in `result`.
final class HeldBackup: Sendable {
    let go = DispatchSemaphore(value: 0)
    let result = Mutex<Result<BackupReport, any Error>?>(nil)

    init(_ engine: Engine, to destination: String) throws {
        let reached = DispatchSemaphore(value: 0)
        let go = go
        var request = BackupRequest(target: try BackupTarget(source: engine.store.location, destination: destination)) { [self] outcome in
            result.withLock { $0 = outcome }
        }
        request.pagesPerStep = 16
        request.afterStep = { step in
            if step == 1 {
                reached.signal()
                go.wait()
            }
        }
        try engine.startBackup(request)
        #expect(reached.wait(timeout: .now() + 20) == .success)
    }
}

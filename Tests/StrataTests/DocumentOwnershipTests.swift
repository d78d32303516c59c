import Foundation
import GRDB
import Testing
@testable import Strata

/// One owner per document, and no file that is not ours (or is newer than us) changed.
@Suite struct DocumentOwnershipTests {
    /// The main file, its WAL and its shared memory, byte for byte (nil: absent).
    func files(_ directory: TestDirectory) -> [Data?] {
        let location = StoreLocation(path: directory.databasePath)
        return [location.path, location.walPath, location.shmPath].map { FileManager.default.contents(atPath: $0) }
    }

    func refusal(_ open: () throws -> Engine) -> StoreError? {
        do {
            let engine = try open()
            try? engine.shutdown()
            return nil
        } catch let error as StoreError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func aSecondEngineOnAnOpenDocumentIsRefusedAndTheOwnerIsUntouched() throws {
        let fixture = EngineFixture()
        let owner = try fixture.open()
        owner.world.spawn(Title("kept"))
        owner.flushNow()

        let error = try #require(refusal { try fixture.open() })
        #expect(error.code == .locked)
        #expect(error.message.contains("this process (another engine), pid \(getpid())"), "\(error)")
        #expect(owner.metrics.crashRecoveryCount == 0)
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).owner?.pid == getpid())

        owner.world.spawn(Title("after the refusal"))
        try owner.shutdown()
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).owner == nil)
        let next = try fixture.open()
        #expect(next.recovery.session.previous == .clean, "the refusal counted no crash and moved no mark")
        #expect(next.recovery.session.crashCount == 0)
        #expect(next.world.entityCount == 2)
        try next.shutdown()
    }

    @Test func aRunningSimIsNamedAsTheOwnerAndItsDeathFreesTheDocumentAtOnce() throws {
        let fixture = EngineFixture()
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: try strataExecutable())
        sim.arguments = ["sim", "--db", fixture.directory.databasePath, "--log-level", "warning", "--entities", "50"]
        let err = Pipe()
        sim.standardOutput = FileHandle.nullDevice
        sim.standardError = err
        let log = OutputCollector(err.fileHandleForReading)
        try sim.run()
        defer { if sim.isRunning { kill(sim.processIdentifier, SIGKILL) } }
        let location = StoreLocation(path: fixture.directory.databasePath)
        #expect(eventually { DocumentLock.owner(of: location)?.pid == sim.processIdentifier }, "\(log.text)")
        // Wait until its session mark is committed: the refusal must not be what changes it.
        #expect(eventually { (try? DatabaseInspection.inspect(path: location.path).cleanShutdown) == false },
                "running: \(sim.isRunning); it said: \(log.text)")

        let error = try #require(refusal { try fixture.open() })
        #expect(error.code == .locked)
        #expect(error.message.contains("process \(sim.processIdentifier) since"), "\(error)")
        #expect(error.message.contains("strata sim"), "\(error)")
        let seen = try DatabaseInspection.inspect(path: location.path)
        #expect(seen.owner?.pid == sim.processIdentifier, "inspect reads a document that a running process owns")
        #expect(seen.crashCount == 0)

        kill(sim.processIdentifier, SIGKILL)
        sim.waitUntilExit()
        let next = try fixture.open()   // at once: the kernel dropped the dead owner's lock
        #expect(next.recovery.session.previous == .crashed)
        #expect(next.recovery.session.crashCount == 1, "one crash: the kill, not the refusal")
        try next.shutdown()
    }

    @Test(arguments: ["PRAGMA user_version = 99", "INSERT INTO grdb_migrations (identifier) VALUES ('v9: from the future')"])
    func aDocumentFromANewerStrataIsRefusedAndLeftByteForByte(change: String) throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.world.spawn(Title("doc"))
        try engine.shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { try $0.execute(sql: change) }
        try queue.close()
        let before = files(fixture.directory)

        let error = try #require(refusal { try fixture.open() })
        #expect(error.code == .newerSchema)
        #expect(error.message.contains("written by a newer Strata"), "\(error)")
        if change.contains("99") { #expect(error.message.contains("schema 99, this build reads up to \(Store.schemaVersion)")) }
        #expect(files(fixture.directory) == before, "the file is unchanged")

        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.document == "newer_schema")
        #expect(inspection.documentDetail?.contains("newer Strata") == true)
        // A read-only connection leaves SQLite's empty -wal and -shm beside a WAL file (it
        // may not delete them); the document itself is unchanged.
        let after = files(fixture.directory)
        #expect(after[0] == before[0] && (after[1] ?? Data()).isEmpty, "inspect changed nothing either")
    }

    @Test(arguments: [
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('mine'); PRAGMA user_version = 7",
        "PRAGMA application_id = 4660; CREATE TABLE session_state (id INTEGER PRIMARY KEY)",
        "CREATE TABLE session_state (id INTEGER PRIMARY KEY); CREATE TABLE notes (body TEXT)",
    ])
    func anotherApplicationsDatabaseIsRefusedNotConverted(setup: String) throws {
        let fixture = EngineFixture()
        try FileManager.default.createDirectory(at: fixture.directory.url, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.writeWithoutTransaction { try $0.execute(sql: setup) }
        try queue.close()
        let before = files(fixture.directory)

        let error = try #require(refusal { try fixture.open() })
        #expect(error.code == .foreign)
        #expect(error.message.contains("not a Strata document"), "\(error)")
        #expect(files(fixture.directory) == before, "not switched to WAL, no table added, user_version kept")
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).document == "foreign")
    }

    /// A tool reading the file (`strata inspect`, a backup) while the engine makes the
    /// document in it: the switch to WAL needs the file to itself, the first checkpoint every
    /// reader gone. The open waits for the reader rather than failing on the 100 ms busy timeout.
    @Test(arguments: ["delete", "wal"])
    func aReaderOnTheFileDoesNotFailTheOpenThatMakesTheDocument(journalMode: String) throws {
        let fixture = EngineFixture()
        try DatabaseQueue(path: fixture.directory.databasePath).writeWithoutTransaction { db in
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = \(journalMode)")
        }
        let reading = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let reader = try fixture.reader()
        Thread.detachNewThread {
            try? reader.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
                reading.signal()
                Thread.sleep(forTimeInterval: 0.6)
            }
            done.signal()
        }
        reading.wait()
        let engine = try fixture.open()
        engine.world.spawn(Title("made while read"))
        try engine.shutdown()
        done.wait()
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).entityCount == 1)
    }

    @Test func aNewDocumentSaysWhatItIs() throws {
        let fixture = EngineFixture()
        try fixture.open().shutdown()
        let id = try DatabaseQueue(path: fixture.directory.databasePath).read { try Int32.fetchOne($0, sql: "PRAGMA application_id") }
        #expect(id == DocumentKind.applicationID)
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.document == "strata")
        #expect(inspection.owner == nil)
    }
}

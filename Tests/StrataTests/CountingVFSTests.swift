import Foundation
import GRDBSQLite
import Testing
@testable import Strata

/// The counting VFS against what SQLite is documented to do on small known cases.
@Suite struct CountingVFSTests {
    /// A raw connection through the VFS, in WAL mode with one table and one committed row.
    func open(_ directory: TestDirectory, _ vfs: CountingVFS) throws -> OpaquePointer {
        var db: OpaquePointer?
        let uri = StoreLocation(path: directory.databasePath, vfs: vfs.name).uri
        #expect(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nil) == SQLITE_OK)
        try exec(db!, "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x); INSERT INTO t VALUES (0)")
        return db!
    }

    func exec(_ db: OpaquePointer, _ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw StoreError(.write, message: String(cString: sqlite3_errmsg(db)), path: "")
        }
    }

    @Test func aFullCommitInWalModeIsOneWalSync() throws {
        let directory = TestDirectory()
        let vfs = try CountingVFS.registerUnique()
        let db = try open(directory, vfs)
        defer { sqlite3_close(db) }
        try exec(db, "PRAGMA synchronous = FULL")
        vfs.reset()
        try exec(db, "INSERT INTO t VALUES (1)")
        let counts = vfs.counts
        #expect(counts.wal.syncs == 1)
        #expect(counts.mainDatabase.syncs == 0)
        #expect(counts.wal.writes >= 1)
        #expect(counts.mainDatabase.writes == 0, "a WAL commit does not touch the database file")
    }

    @Test func aNormalCommitInWalModeSyncsNothing() throws {
        let directory = TestDirectory()
        let vfs = try CountingVFS.registerUnique()
        let db = try open(directory, vfs)
        defer { sqlite3_close(db) }
        try exec(db, "PRAGMA synchronous = NORMAL")
        vfs.reset()
        for i in 1 ... 10 { try exec(db, "INSERT INTO t VALUES (\(i))") }
        #expect(vfs.counts.syncs == 0)
        // Each commit appends one frame: a page plus its 24-byte header.
        #expect(vfs.counts.wal.writeBytes == 10 * (4096 + 24))
    }

    @Test func aPassiveCheckpointAfterWritesSyncsTheWalAndTheDatabase() throws {
        let directory = TestDirectory()
        let vfs = try CountingVFS.registerUnique()
        let db = try open(directory, vfs)
        defer { sqlite3_close(db) }
        try exec(db, "PRAGMA synchronous = NORMAL; INSERT INTO t VALUES (1)")
        vfs.reset()
        var log: Int32 = 0, copied: Int32 = 0
        #expect(sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied) == SQLITE_OK)
        let counts = vfs.counts
        #expect(counts.syncs == 2)
        #expect(counts.wal.syncs == 1)
        #expect(counts.mainDatabase.syncs == 1)
        #expect(counts.mainDatabase.writes > 0)

        vfs.reset()
        #expect(sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied) == SQLITE_OK)
        #expect(vfs.counts.syncs == 0, "nothing left to copy, nothing synced")
    }

    @Test func aRollbackJournalCommitSyncsJournalAndDatabase() throws {
        let directory = TestDirectory()
        let vfs = try CountingVFS.registerUnique()
        var db: OpaquePointer?
        #expect(sqlite3_open_v2(StoreLocation(path: directory.databasePath, vfs: vfs.name).uri, &db,
                                SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nil) == SQLITE_OK)
        defer { sqlite3_close(db) }
        try exec(db!, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL; CREATE TABLE t (x)")
        vfs.reset()
        try exec(db!, "INSERT INTO t VALUES (1)")
        let counts = vfs.counts
        #expect(counts.journal.syncs >= 1)
        #expect(counts.mainDatabase.syncs == 1)
        #expect(counts.wal.syncs == 0)
    }

    @Test func aFlushOfDerivedKeysAloneSyncsNothing() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow(reason: .majorAction)
        let before = try #require(engine.metrics.vfs)
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }
        engine.flushNow(reason: .majorAction)   // drains both tiers; only derived has work
        let delta = try #require(engine.metrics.vfs).since(before)
        #expect(delta.syncs == 0)
        #expect(delta.wal.writes > 0)
        #expect(engine.metrics.fullCommitCount == 1, "only the spawn's commit was FULL")
        try engine.shutdown()
    }

    /// Which pages commits write (``PageWrites``): each WAL frame's page number, with the
    /// commits, mapped to the tables that own the pages.
    @Test func framesAreRecordedWithTheirCommitsAndMappedToTheirTables() throws {
        let directory = TestDirectory()
        let vfs = try CountingVFS.registerUnique()
        let db = try open(directory, vfs)
        defer { sqlite3_close(db) }
        try exec(db, "CREATE TABLE b (y)")
        vfs.recordPageWrites(true)
        for i in 1 ... 5 { try exec(db, "INSERT INTO t VALUES (\(i))") }                         // one leaf each
        try exec(db, "BEGIN; INSERT INTO t VALUES (6); INSERT INTO b VALUES (6); COMMIT")        // two leaves, one commit
        var pages = PageWrites()
        pages.take(from: vfs)
        #expect(pages.commits == 6)
        #expect(pages.frames == 7, "a page per table written, per commit")
        #expect(pages.dropped == 0)
        let trees = try pages.byTree(databasePath: directory.databasePath)
        #expect(trees.first { $0.name == "t" }?.frames == 6)
        #expect(trees.first { $0.name == "b" }?.frames == 1)
        #expect(trees.first { $0.name == "t" }?.pages == 1, "the same leaf each time")
        #expect(abs(pages.pagesPerCommit - 7.0 / 6) < 1e-9)

        vfs.recordPageWrites(false)
        try exec(db, "INSERT INTO t VALUES (7)")
        pages.take(from: vfs)
        #expect(pages.commits == 6, "nothing recorded while off")
    }

    @Test func theEngineReportsItsOwnSessionsCounts() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        #expect(engine.metrics.vfs?.syncs == 0, "opening is not counted")
        engine.world.spawn(Title("critical"))
        engine.flushNow(reason: .majorAction)
        let afterCritical = try #require(engine.metrics.vfs)
        #expect(afterCritical.wal.syncs == 1, "one FULL commit: one WAL sync")
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow(reason: .majorAction)   // spawn: critical again
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }
        fixture.clock.advance(by: .seconds(10))
        engine.endTick()                         // a derived batch: NORMAL
        engine.waitForWriter()
        #expect(engine.metrics.vfs?.wal.syncs == 2)
        #expect(engine.metrics.vfs!.wal.writeBytes > afterCritical.wal.writeBytes)
        try engine.shutdown()
        #expect(engine.metrics.vfs!.syncs > 2, "the clean-shutdown mark and the TRUNCATE checkpoint sync")
    }
}

@Suite(.serialized) struct CountingVFSLeaseTests {
    @Test func enginesOpenedOneAfterAnotherReuseTheirCountingVFS() throws {
        // SQLite keeps every registered VFS until the process ends: an engine gives its
        // counting VFS back at the close, and the next open takes it.
        var fixture = EngineFixture()
        fixture.config.metrics.countFsyncs = true
        let first = try fixture.open()
        first.world.spawn(Position(x: 1, y: 1))
        try first.shutdown()
        let syncsOfFirst = try #require(first.metrics.vfs).wal.syncs + (try #require(first.metrics.vfs)).mainDatabase.syncs
        var names: Set<String> = [try #require(first.countingVFS).name]
        for _ in 0 ..< 5 {
            let engine = try fixture.open()
            names.insert(try #require(engine.countingVFS).name)
            engine.world.spawn(Position(x: 2, y: 2))
            #expect(engine.flushNow())
            try engine.shutdown()
        }
        // Tests running beside this one open engines too, and may take the VFS given back
        // between a close and the next open: not at every one of them.
        #expect(names.count < 6, "the opens reused a counting VFS: \(names)")
        #expect(CountingVFS.registeredCount > 0)
        #expect(try #require(first.metrics.vfs).wal.syncs + (try #require(first.metrics.vfs)).mainDatabase.syncs == syncsOfFirst,
                "a closed engine's figures stay what they were")
        #expect(syncsOfFirst > 0)
    }
}

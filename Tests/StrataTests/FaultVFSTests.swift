import Foundation
import GRDBSQLite
import Testing
@testable import Strata
import StrataTesting

/// The fault-injecting VFS on small known cases: what a power loss keeps, and when an
/// armed I/O error fires.
@Suite struct FaultVFSTests {
    func register() throws -> FaultVFS { try FaultVFS.register(name: "fault-\(UUID().uuidString)") }

    /// A raw WAL connection through the VFS with one table and one row, synced.
    func open(_ directory: TestDirectory, _ vfs: FaultVFS) throws -> OpaquePointer {
        var db: OpaquePointer?
        let uri = StoreLocation(path: directory.databasePath, vfs: vfs.name).uri
        #expect(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nil) == SQLITE_OK)
        try exec(db!, "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; PRAGMA synchronous = FULL; CREATE TABLE t (x); INSERT INTO t VALUES (0)")
        return db!
    }

    @discardableResult
    func exec(_ db: OpaquePointer, _ sql: String) throws -> Int32 {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw StoreError(.write, sqliteCode: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), path: "") }
        return rc
    }

    /// The rows of `t` after reopening with the default VFS.
    func rows(_ directory: TestDirectory) throws -> [Int] {
        try? FileManager.default.removeItem(atPath: directory.databasePath + "-shm")
        var db: OpaquePointer?
        #expect(sqlite3_open(directory.databasePath, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT x FROM t ORDER BY x", -1, &statement, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_finalize(statement) }
        var result: [Int] = []
        while sqlite3_step(statement) == SQLITE_ROW { result.append(Int(sqlite3_column_int64(statement, 0))) }
        return result
    }

    @Test func aPowerLossKeepsSyncedCommitsAndDropsTheOthers() throws {
        let directory = TestDirectory()
        let vfs = try register()
        let db = try open(directory, vfs)
        try exec(db, "INSERT INTO t VALUES (1)")                               // FULL: the WAL is synced
        try exec(db, "PRAGMA synchronous = NORMAL; INSERT INTO t VALUES (2)")   // not synced
        #expect(vfs.state.pendingChanges > 0)
        vfs.cutPower()
        try exec(db, "INSERT INTO t VALUES (3)")   // after the cut: reported done, never on disk
        sqlite3_close(db)
        let cut = try vfs.applyPowerLoss(.drop, seed: 1)
        #expect(cut.changes > 0 && cut.kept == 0)
        #expect(try rows(directory) == [0, 1])
    }

    @Test func withoutTheCutEveryCommitIsThere() throws {
        let directory = TestDirectory()
        let vfs = try register()
        let db = try open(directory, vfs)
        try exec(db, "PRAGMA synchronous = NORMAL; INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)")
        sqlite3_close(db)
        #expect(try rows(directory) == [0, 1, 2])
    }

    @Test func aTornPowerLossKeepsSomeUnsyncedChangesAndSQLiteStillReadsTheFile() throws {
        var keptSome = false
        for seed in 1 ... 20 as ClosedRange<UInt64> {
            let directory = TestDirectory()
            let vfs = try register()
            let db = try open(directory, vfs)
            try exec(db, "PRAGMA synchronous = NORMAL")
            for i in 1 ... 5 { try exec(db, "INSERT INTO t VALUES (\(i))") }
            vfs.cutPower()
            sqlite3_close(db)
            let cut = try vfs.applyPowerLoss(.torn, seed: seed)
            keptSome = keptSome || cut.kept + cut.torn > 0
            let found = try rows(directory)
            // The WAL's checksums stop at the first frame lost or torn: a prefix of the commits survives.
            #expect(found == Array(0 ..< found.count), "seed \(seed): \(found)")
        }
        #expect(keptSome)
    }

    @Test func aFileCreatedAndNeverSyncedVanishes() throws {
        let directory = TestDirectory()
        let vfs = try register()
        var db: OpaquePointer?
        let uri = StoreLocation(path: directory.databasePath, vfs: vfs.name).uri
        #expect(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nil) == SQLITE_OK)
        try exec(db!, "PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY; CREATE TABLE t (x)")
        #expect(FileManager.default.fileExists(atPath: directory.databasePath))
        vfs.cutPower()
        sqlite3_close(db)
        let cut = try vfs.applyPowerLoss(.drop, seed: 1)
        #expect(cut.vanished == 1)
        #expect(!FileManager.default.fileExists(atPath: directory.databasePath))
    }

    @Test func anArmedErrorFailsTheNthCallOnce() throws {
        let directory = TestDirectory()
        let vfs = try register()
        let db = try open(directory, vfs)
        defer { sqlite3_close(db) }
        vfs.arm(.sync, nth: 2, code: FaultVFS.ioError(for: .sync))
        try exec(db, "INSERT INTO t VALUES (1)")   // sync 1
        #expect(throws: StoreError.self) { try exec(db, "INSERT INTO t VALUES (2)") }   // sync 2 fails
        try exec(db, "INSERT INTO t VALUES (3)")   // once: the next works
        #expect(vfs.state.faults == 1)
        #expect(try rows(directory) == [0, 1, 3])
    }

    @Test func aPersistentErrorHoldsUntilDisarmed() throws {
        let directory = TestDirectory()
        let vfs = try register()
        let db = try open(directory, vfs)
        defer { sqlite3_close(db) }
        vfs.arm(.write, nth: 1, code: FaultVFS.diskFull, persistent: true)
        for i in 1 ... 3 {
            do {
                try exec(db, "INSERT INTO t VALUES (\(i))")
                Issue.record("insert \(i) should have failed")
            } catch let error as StoreError {
                #expect(error.sqliteCode.map { $0 & 0xFF } == SQLITE_FULL)
            }
        }
        vfs.disarm()
        try exec(db, "INSERT INTO t VALUES (4)")
        #expect(vfs.state.faults >= 3)
        #expect(try rows(directory) == [0, 4])
    }
}

import Foundation
import GRDB
import GRDBSQLite

/// The pages of one backup on their way: SQLite's online backup
/// (<https://sqlite.org/backup.html>) from the writer's connection into a new file, a
/// bounded number of pages per step. Writes the writer commits between two steps go
/// into the copy as well (SQLite updates a backup from the connection it reads), so the
/// finished copy is the document as of the last step, not of the first.
///
/// Writer thread (``BackupTask``), or a tool's own thread with a connection of its own.
final class BackupCopy {
    /// The file being written (a temporary name beside the final one).
    let path: String
    private var destination: OpaquePointer?
    private var backup: OpaquePointer?
    /// Pages copied per step; adapted to the step budget after each step.
    private(set) var pagesPerStep: Int32
    private(set) var steps = 0
    /// The source's pages, as the last step saw them.
    private(set) var pageCount = 0
    /// The longest step so far: what a batch waited behind the backup at most.
    private(set) var longestStep: Duration = .zero
    /// See ``BackupCopier/filesAtStart``: never, for a copy of pages.
    var filesAtStart: (AssetFiles.Outcome, Bool)?

    /// Starts a copy of `source`'s main database into a new file at `path` (through the VFS
    /// `vfs`, nil: the default). Throws if the file cannot be made.
    init(from source: Database, to path: String, vfs: String? = nil, pagesPerStep: Int32 = 256) throws {
        self.path = path
        self.pagesPerStep = max(1, pagesPerStep)
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        var handle: OpaquePointer?
        let opened = sqlite3_open_v2(path, &handle, flags, vfs)
        guard opened == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close(handle)
            throw StoreError(.write, sqliteCode: opened, message: "cannot create the backup file: \(message)", path: path)
        }
        destination = handle
        // No journal and no sync for the copy: a copy cut short is thrown away, never rolled
        // back, and the finished one is synced once off the writer (``StagedBackup``). With
        // SQLite's defaults the last step would sync the whole copy on the writer thread.
        sqlite3_exec(handle, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", nil, nil, nil)
        guard let started = sqlite3_backup_init(handle, "main", source.sqliteConnection, "main") else {
            let error = StoreError(.write, sqliteCode: sqlite3_extended_errcode(handle),
                                   message: "cannot start the backup: \(String(cString: sqlite3_errmsg(handle)))", path: path)
            close()
            throw error
        }
        backup = started
    }

    deinit { close() }

    /// Copies the next `pagesPerStep` pages. Returns true once every page is copied. A
    /// source busy for a moment (SQLITE_BUSY, SQLITE_LOCKED) is a step that copied nothing.
    func step() throws -> Bool {
        guard let backup else { return true }
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        let result = sqlite3_backup_step(backup, pagesPerStep)
        steps += 1
        longestStep = max(longestStep, stopwatch.now().duration(since: started))
        pageCount = Int(sqlite3_backup_pagecount(backup))
        switch result {
        case SQLITE_DONE:
            let finished = sqlite3_backup_finish(backup)
            self.backup = nil
            guard finished == SQLITE_OK else { throw failure(finished, "cannot finish the backup") }
            return true
        case SQLITE_OK, SQLITE_BUSY, SQLITE_LOCKED:
            return false
        default:
            throw failure(result, "a backup step failed")
        }
    }

    /// Runs every step at once (a tool's copy of a file no writer of its own is using).
    func copyAll() throws {
        pagesPerStep = -1
        while try !step() {}
    }

    /// Sets the pages of the next steps so that one takes about `budget`, from what the
    /// last one took (`took`).
    func adapt(took: Duration, budget: Duration) {
        guard pagesPerStep > 0, took > .zero else { return }
        let scaled = Double(pagesPerStep) * min(4, max(0.25, budget / took))
        pagesPerStep = Int32(min(65_536, max(16, scaled)))
    }

    /// Stops the copy (if unfinished) and closes the file. The file stays for the caller.
    func close() {
        if let backup { sqlite3_backup_finish(backup) }
        backup = nil
        if let destination { sqlite3_close_v2(destination) }
        destination = nil
    }

    private func failure(_ code: Int32, _ what: String) -> StoreError {
        let detail = destination.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return StoreError(.write, sqliteCode: code, message: "\(what): \(detail)", path: path)
    }
}

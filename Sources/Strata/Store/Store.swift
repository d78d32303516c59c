import Foundation
import GRDB
import Logging

/// The SQLite file of one document, opened with the engine's pragmas and schema.
///
/// Opened on the caller's thread for recovery and loading, then owned by the writer
/// thread, which is the only one to write through it (GRDB serializes every access
/// on the queue's own dispatch queue as well).
///
/// Pragmas (docs/architecture.md, "The file"; <https://sqlite.org/pragma.html>):
/// `page_size` and `auto_vacuum` (`[database]`, INCREMENTAL by default) before the first table, `journal_mode=WAL`, `synchronous=NORMAL`,
/// `wal_autocheckpoint=0` (the writer checkpoints by hand), `foreign_keys=ON`, a
/// `journal_size_limit` so a checkpointed WAL is truncated back to a bounded size, and
/// `secure_delete=FAST`: Debian builds SQLite with `SQLITE_SECURE_DELETE`, which zeroes
/// every page freed and writes it out again (compaction frees pages all the time: it
/// doubled its writes); FAST still clears deleted content on the pages a transaction
/// writes anyway, and never adds a page write; `cache_size` 32 MiB (allocated as used):
/// a transaction larger than SQLite's default 2 MB cache spills its pages into the WAL
/// and writes them again and again (a million spawns in 30 s wrote 1.8 GB with it, 0.58 GB
/// without).
///
/// Before SQLite touches the file, the store takes the document's owner lock
/// (`DocumentLock`) and checks what the file is (``DocumentKind``): a document owned
/// by another process, written by a newer Strata, or belonging to another application
/// is refused, and left as it was.
package final class Store: Sendable {
    public let location: StoreLocation
    let queue: DatabaseQueue
    /// Held until ``close()`` (unless it was lent: ``init(location:options:lock:)``).
    let ownership: DocumentLock
    private let ownsLock: Bool
    /// True if this open created the schema (a new document).
    public let isNew: Bool

    /// Options that tests and tools add to the writer connection.
    public struct Options: Sendable {
        public var pageSize = DatabaseConfig().pageSize
        /// Applied to a new file only (`[database] auto_vacuum`).
        public var autoVacuum = AutoVacuum.incremental
        public var busyTimeout: Duration = .milliseconds(100)
        public var journalSizeLimitBytes = 5 * 1024 * 1024
        /// A clean start checks the tables it does not read past this age of the last
        /// check (`[maintenance] start_check_secs`; zero: never). SessionState.swift.
        public var startCheckAge: Duration = .zero
        /// Runs on every connection after the engine's pragmas (tests install observers here).
        public var prepareConnection: (@Sendable (Database) throws -> Void)?

        public init() {}
    }

    /// Opens (creating if needed) and migrates the database at `location`, under its owner lock.
    /// `lock`: the owner lock of another path, held by the caller and lent for the store's
    /// life (a repair builds a file beside the document under the document's lock); not
    /// released by ``close()``. Without it, the store takes the lock of `location`.
    package convenience init(location: StoreLocation, options: Options = Options()) throws {
        try self.init(location: location, options: options, lock: nil)
    }

    /// How long the open waits on another connection's lock (see `init`).
    static let openBusyTimeout: Duration = .seconds(5)

    init(location: StoreLocation, options: Options, lock: DocumentLock?) throws {
        self.location = location
        var configuration = Configuration()
        // The open waits longer on a lock than the writer does: a tool reading the file
        // (`strata inspect`, a backup) while the document is made in it holds it up — the
        // switch to WAL needs the file to itself, the first checkpoint every reader gone —
        // and an open that failed on that would end the host. The writer's own timeout is
        // set once the document is open.
        configuration.busyMode = .timeout(max(options.busyTimeout, Self.openBusyTimeout).seconds)
        configuration.foreignKeysEnabled = true
        configuration.label = "strata.writer"
        let pageSize = options.pageSize
        let autoVacuum = options.autoVacuum.pragma
        let journalLimit = options.journalSizeLimitBytes
        let prepare = options.prepareConnection
        let path = location.path
        configuration.prepareDatabase { db in
            // Before any pragma that writes (journal_mode = WAL rewrites the header).
            try DocumentKind.classify(db).requireWritable(path: path)
            // Both take effect only in a file without tables (a new one). With INCREMENTAL, free
            // pages are returned to the filesystem step by step (`MaintenanceTask.swift`);
            // a file keeps the mode it was made with until `strata maintain --vacuum`.
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            try db.execute(sql: "PRAGMA auto_vacuum = \(autoVacuum)")
            let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            guard mode == "wal" else {
                throw StoreError(.open, message: "could not enable WAL (journal_mode is \(mode ?? "unknown"))", path: db.description)
            }
            try db.execute(sql: """
                PRAGMA synchronous = NORMAL;
                PRAGMA wal_autocheckpoint = 0;
                PRAGMA journal_size_limit = \(journalLimit);
                PRAGMA secure_delete = FAST;
                PRAGMA cache_size = -32768;
                """)
            try prepare?(db)
        }
        try Self.checkPath(location)
        ownership = try lock ?? DocumentLock.acquire(for: location)
        ownsLock = lock == nil
        do {
            let directory = URL(fileURLWithPath: location.path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            queue = try DatabaseQueue(path: location.uri, configuration: configuration)
            try Self.checkOpenedFile(queue, location: location)
            isNew = try queue.read { db in try !db.tableExists("session_state") }
            let migrated = try queue.read { db in try !Self.migrator.hasCompletedMigrations(db) }
            try Self.migrator.migrate(queue)
            // What the migrations wrote (a new document's schema, a table rebuilt) goes into
            // the file now: the writer's WAL budget counts from an empty WAL.
            if migrated { try queue.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) } }
            try queue.write { db in
                if try Int32.fetchOne(db, sql: "PRAGMA application_id") != DocumentKind.applicationID {
                    try db.execute(sql: "PRAGMA application_id = \(DocumentKind.applicationID)")
                }
            }
            let milliseconds = Int(options.busyTimeout.seconds * 1000)
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA busy_timeout = \(milliseconds)") }
        } catch {
            if ownsLock { ownership.release() }
            throw StoreError((error as? StoreError)?.code ?? .open, wrapping: error, path: location.path)
        }
    }

    /// Says plainly what is wrong with a path SQLite would only call "unable to open": a
    /// folder where the file should be, or a file where a folder should be.
    static func checkPath(_ location: StoreLocation) throws {
        guard !location.path.utf8.contains(0) else {
            throw StoreError(.open, message: "the path holds a NUL character: the file system would end it there", path: location.path)
        }
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: location.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw StoreError(.open, message: "this is a folder, not a database file: give the path of a file in it", path: location.path)
        }
        var folder = URL(fileURLWithPath: location.path).deletingLastPathComponent()
        while folder.path != "/" {
            if fm.fileExists(atPath: folder.path, isDirectory: &isDirectory) {
                guard isDirectory.boolValue else {
                    throw StoreError(.open, message: "cannot create the database: \(folder.path) is a file, not a folder", path: location.path)
                }
                break
            }
            folder.deleteLastPathComponent()
        }
    }

    /// Guards against an SQLite without URI support creating a file named "file:…".
    private static func checkOpenedFile(_ queue: DatabaseQueue, location: StoreLocation) throws {
        let file = try queue.read { db in
            try Row.fetchOne(db, sql: "PRAGMA database_list")?.value("file", as: String.self)
        }
        guard let file, URL(fileURLWithPath: file).standardizedFileURL.path == location.path else {
            throw StoreError(.open, message: "SQLite opened \(file ?? "nothing") for \(location.uri): URI support is off", path: location.path)
        }
    }

    /// The file's page size (the configured one applies only to a new file).
    func pageSize() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096 }
    }

    /// Runs `body` on the connection outside any transaction. Writer thread.
    func withConnection<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.writeWithoutTransaction(body)
    }

    /// Closes the connection. Pending WAL content stays in the WAL (no implicit checkpoint
    /// beyond SQLite's own on last close).
    /// Releases the document's owner lock.
    public func close() throws {
        defer { if ownsLock { ownership.release() } }
        try queue.close()
    }
}

import Foundation
import GRDB

/// Where a database lives, and the URI SQLite opens it by.
///
/// The store always opens `file:PATH[?vfs=NAME]`, so an instrumented VFS can be
/// selected per database (<https://sqlite.org/uri.html>; Debian builds SQLite with
/// `SQLITE_USE_URI=1`). Characters with a meaning in URIs are percent-encoded.
package struct StoreLocation: Sendable, Equatable {
    /// Absolute path of the main database file.
    public var path: String
    /// A registered SQLite VFS name, or nil for the default.
    public var vfs: String?

    public init(path: String, vfs: String? = nil) {
        self.path = URL(fileURLWithPath: path).standardizedFileURL.path
        self.vfs = vfs
    }

    public var walPath: String { path + "-wal" }
    public var shmPath: String { path + "-shm" }
    /// Rows the database refused, parked as JSON lines (``RejectedWrite``).
    public var rejectedPath: String { path + ".rejected" }
    /// Space kept for a shutdown on a full disk (`[writer] disk_reserve_kb`): freed when a
    /// shutdown meets a disk still full, made again at the next open.
    public var reservePath: String { path + ".reserve" }
    /// Present when a check while running found the file damaged: the next open runs the
    /// full integrity check, and sets the file aside and salvages it.
    public var verifyMarkerPath: String { path + ".verify" }
    /// The folder of the document's asset files (`Sources/Strata/Assets`), its inbox (files
    /// dropped there are imported) and its quarantine (files nobody registered).
    public var assetsPath: String { path + ".assets" }
    public var assetsInboxPath: String { path + ".assets/inbox" }
    public var assetsQuarantinePath: String { path + ".assets/quarantine" }
    /// Written while a corrupt file is being replaced (`Engine+StoreReplacement.swift`):
    /// names where the corrupt file was set aside, until the new one is complete.
    public var replacingMarkerPath: String { path + ".replacing" }
    /// Written before a salvage moves a damaged file aside, removed once the salvaged file
    /// is in place under the document's name (`Repair.swift`): names where the original went.
    public var repairMarkerPath: String { path + ".repair" }
    /// Where a salvage builds the new document (`Repair.swift`): renamed to the document's
    /// name only when complete, so the name never holds half a salvage.
    public var salvagePath: String { path + ".salvage" }

    public var uri: String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "/-._~")
        let encoded = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        var uri = "file:" + encoded
        if let vfs { uri += "?vfs=" + (vfs.addingPercentEncoding(withAllowedCharacters: allowed) ?? vfs) }
        return uri
    }

    /// Size of the WAL file in bytes (0 if absent).
    public var walBytes: Int {
        ((try? FileManager.default.attributesOfItem(atPath: walPath))?[.size] as? NSNumber)?.intValue ?? 0
    }
}

extension StoreLocation {
    /// A read-only connection to the file (inspection, salvage, the idle check, readers of
    /// the log and the jobs): never a writer, never in the writer's way in WAL mode.
    /// Which of the WAL companions exist now (before a read-only visit).
    var companions: (wal: Bool, shm: Bool) {
        (FileManager.default.fileExists(atPath: walPath), FileManager.default.fileExists(atPath: shmPath))
    }

    /// Removes the `-wal` and `-shm` files a read-only visit made: SQLite creates them to
    /// read a WAL file and, read-only, never removes them, so a tool that only read would
    /// leave them behind. Only those that did not exist `before`, only while no engine
    /// owns the document, and a WAL only if it is empty. Call once the connection is closed.
    func removeCompanionsMadeByReading(before: (wal: Bool, shm: Bool)) {
        guard !before.wal || !before.shm, DocumentLock.owner(of: self) == nil else { return }
        if !before.wal, walBytes == 0 { try? FileManager.default.removeItem(atPath: walPath) }
        if !before.shm, !FileManager.default.fileExists(atPath: walPath) { try? FileManager.default.removeItem(atPath: shmPath) }
    }

    func readOnlyQueue() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: uri, configuration: configuration)
    }

    /// Runs `body` in a read transaction on a read-only connection to the file, which must
    /// exist (tools reading a document another process may have open). Errors come back as
    /// ``StoreError``.
    func readExisting<T>(_ body: (Database) throws -> T) throws -> T {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(.open, message: "no database file", path: path)
        }
        let before = companions
        defer { removeCompanionsMadeByReading(before: before) }
        do {
            let queue = try readOnlyQueue()
            defer { try? queue.close() }
            return try queue.read { db in
                // Another application's SQLite file: said as such, never "0 pending" nor a
                // raw "no such table".
                switch try DocumentKind.classify(db) {
                case .strata: break
                case .empty: throw StoreError(.foreign, message: "an empty SQLite file, not a Strata document", path: path)
                case .foreign(let why): throw StoreError(.foreign, message: "not a Strata document (\(why))", path: path)
                case .newerSchema(let why): throw StoreError(.newerSchema, message: why, path: path)
                }
                return try body(db)
            }
        } catch let error as StoreError {
            throw error
        } catch let error as HistoryError {
            throw error   // about the time asked for, not the file
        } catch {
            throw StoreError(.read, wrapping: error, path: path)
        }
    }
}

import Foundation
import GRDB

/// Where a database lives, and the URI SQLite opens it by.
///
/// The store always opens `file:PATH[?vfs=NAME]`, so an instrumented VFS can be
/// selected per database (<https://sqlite.org/uri.html>; Debian builds SQLite with
/// `SQLITE_USE_URI=1`). Characters with a meaning in URIs are percent-encoded.
public struct StoreLocation: Sendable, Equatable {
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
    /// Space kept for a shutdown on a full disk (``DiskReserve``, `[writer] disk_reserve_kb`).
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
        do {
            let queue = try readOnlyQueue()
            defer { try? queue.close() }
            return try queue.read(body)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.read, wrapping: error, path: path)
        }
    }
}

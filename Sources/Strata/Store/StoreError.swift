import GRDB
import GRDBSQLite

/// An error of the storage layer: what failed, the SQLite result code, and where.
///
/// Like GRDB's `DatabaseError`, it pattern-matches on its code:
/// `catch let error as StoreError where error.code == .corrupt`.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable {
        /// The file could not be opened or set up (pragmas, URI).
        case open
        /// A schema migration failed.
        case migration
        /// The file is not a database, or failed its integrity check.
        case corrupt
        /// A batch could not be committed.
        case write
        /// A read failed.
        case read
        /// Another process (or another engine in this one) owns the document.
        case locked
        /// The document was written by a newer Strata (a schema this build does not know).
        case newerSchema
        /// The file is an SQLite database, but not a Strata document.
        case foreign
    }

    public var code: Code
    /// The SQLite extended result code, when SQLite produced the error.
    public var sqliteCode: Int32?
    public var message: String
    /// The database file.
    public var path: String

    public init(_ code: Code, sqliteCode: Int32? = nil, message: String, path: String) {
        self.code = code
        self.sqliteCode = sqliteCode
        self.message = message
        self.path = path
    }

    /// Wraps any error thrown by GRDB or SQLite.
    init(_ code: Code, wrapping error: any Error, path: String) {
        if let db = error as? DatabaseError {
            self.init(code, sqliteCode: db.extendedResultCode.rawValue,
                      message: db.message ?? "\(db.resultCode)", path: path)
        } else if let store = error as? StoreError {
            self = store
        } else {
            self.init(code, message: "\(error)", path: path)
        }
    }

    /// SQLITE_NOTADB or SQLITE_CORRUPT: the file cannot be trusted.
    public var isCorruption: Bool {
        code == .corrupt || [SQLITE_NOTADB, SQLITE_CORRUPT].contains((sqliteCode ?? 0) & 0xFF)
    }

    public var description: String {
        let sqlite = sqliteCode.map { " (SQLite \($0))" } ?? ""
        return "\(code.rawValue) error on \(path)\(sqlite): \(message)"
    }
}

import Foundation
import GRDB
import GRDBSQLite

/// `SQLITE_STATIC`: SQLite may use the bound bytes until the statement is reset; every
/// bind that uses it is stepped and reset inside the closure that lends the bytes.
let SQLITE_STATIC = unsafeBitCast(0, to: sqlite3_destructor_type.self)

/// Steps a statement that returns no rows, then resets it; throws SQLite's error.
@inline(__always)
func stepDone(_ statement: OpaquePointer, _ db: Database) throws {
    let code = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard code == SQLITE_DONE else { throw sqliteError(db) }
}

/// The connection's last error, as GRDB's `DatabaseError`.
func sqliteError(_ db: Database) -> DatabaseError {
    DatabaseError(resultCode: ResultCode(rawValue: sqlite3_extended_errcode(db.sqliteConnection)),
                  message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
}

/// Binds a BLOB, keeping a zero-length one a BLOB rather than NULL.
@inline(__always)
func bindBlob(_ statement: OpaquePointer, _ index: Int32, _ bytes: UnsafeRawBufferPointer) {
    sqlite3_bind_blob(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), SQLITE_STATIC)
}

/// The bytes of a BLOB column, valid until the statement steps again.
@inline(__always)
func columnBlob(_ statement: OpaquePointer, _ column: Int32) -> UnsafeRawBufferPointer {
    let count = Int(sqlite3_column_bytes(statement, column))
    return UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, column), count: count)
}

/// Milliseconds since 1970, as stored in `*_at` columns.
func unixMilliseconds(_ date: Date = Date()) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }

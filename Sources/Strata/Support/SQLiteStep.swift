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

/// Binds a BLOB, keeping a zero-length one a BLOB rather than NULL. Throws if SQLite
/// refuses it (SQLITE_TOOBIG: a value longer than the connection's length limit), which
/// would otherwise leave the parameter NULL.
@inline(__always)
func bindBlob(_ statement: OpaquePointer, _ index: Int32, _ bytes: UnsafeRawBufferPointer) throws {
    try checkBind(sqlite3_bind_blob(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), SQLITE_STATIC), index)
}

/// Throws SQLite's error for a bind that did not succeed.
@inline(__always)
func checkBind(_ code: Int32, _ index: Int32) throws {
    guard code == SQLITE_OK else {
        throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "parameter \(index): \(String(cString: sqlite3_errstr(code)))")
    }
}

/// The bytes of a BLOB column, valid until the statement steps again.
@inline(__always)
func columnBlob(_ statement: OpaquePointer, _ column: Int32) -> UnsafeRawBufferPointer {
    let count = Int(sqlite3_column_bytes(statement, column))
    return UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, column), count: count)
}

/// Milliseconds since 1970, as stored in `*_at` columns.
func unixMilliseconds(_ date: Date = Date()) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }

/// A value for ``executeChecked(_:_:_:)``.
enum BoundValue {
    case int(Int64)
    case text(String)
    case blob([UInt8])
    case null
}

/// `SQLITE_TRANSIENT`: SQLite copies the bound bytes.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Runs a statement that returns no rows with `values` bound, every bind checked: GRDB's
/// own argument binding stops the process on a value SQLite refuses (`try!`), and the
/// writer must survive any row (a refused row is isolated and parked, Writer+Rejection.swift).
func executeChecked(_ db: Database, _ sql: String, _ values: [BoundValue]) throws {
    let statement = try db.cachedStatement(sql: sql).sqliteStatement
    for (offset, value) in values.enumerated() {
        let index = Int32(offset + 1)
        let code: Int32 = switch value {
        case .int(let v): sqlite3_bind_int64(statement, index, v)
        case .text(let v): sqlite3_bind_text(statement, index, v, -1, SQLITE_TRANSIENT)
        case .blob(let v): v.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), SQLITE_TRANSIENT) }
        case .null: sqlite3_bind_null(statement, index)
        }
        if code != SQLITE_OK {
            sqlite3_clear_bindings(statement)
            try checkBind(code, index)
        }
    }
    try stepDone(statement, db)
}

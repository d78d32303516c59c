import Foundation
import GRDB
import GRDBSQLite

/// A reload's entity rows and base rows, stepped on a thread of its own while the opening
/// thread loads the rows read before them (``Store/rebuild(_:typeIDs:log:_:logger:asOf:)``).
///
/// SQLite's stepping (a leaf of 512 bytes at a time, each a read) and the decoding into
/// columns each took about half of a million-entity reload's base rows, one after the
/// other on the opening thread. Here they overlap: the reading thread copies runs of rows
/// (their numbers, types, versions and payload bytes) and hands them over through a short
/// queue; at most ``inFlight`` runs wait, so the copies cost a few hundred kilobytes, not
/// a second copy of the file. The statement is used by the reading thread alone until
/// ``forEachRun(_:)`` returns.
final class ReloadReader: @unchecked Sendable {
    struct Row {
        var number: EntityNumber
        var typeID: Int64
        var version: Int
        var start: Int
        /// The payload's (or the id's) length; for an entity row, ``nullID`` if the id is NULL.
        var count: Int
    }

    /// An entity row's `count` when its id is NULL (made from the node and the number: `EntityIDColumn`).
    static let nullID = -1

    final class Run {
        var rows: [Row] = []
        var bytes: [UInt8] = []
    }

    static let rowsPerRun = 4096
    static let inFlight = 4

    private let condition = NSCondition()
    private var ready: [Run] = []
    private var spare: [Run] = []
    private var finished = false
    /// The last step's result code: `SQLITE_DONE` unless the read stopped early.
    private(set) var lastResult = SQLITE_OK

    /// Starts reading `statement` (prepared, not stepped yet; columns: entity number, type
    /// id, payload version, payload; or entity number and id, the entities' rows) on a
    /// thread of its own.
    init(_ statement: OpaquePointer) {
        nonisolated(unsafe) let statement = statement   // used by that thread alone (see above)
        let thread = Thread { [self] in read(statement) }
        thread.name = "strata.reload"
        thread.start()
    }

    /// Calls `body` with each run of rows, in the statement's order, on the calling
    /// thread; returns once every row was read and handed to `body`.
    func forEachRun(_ body: (Run) -> Void) {
        while let run = next() {
            body(run)
            run.rows.removeAll(keepingCapacity: true)
            run.bytes.removeAll(keepingCapacity: true)
            condition.withLock {
                spare.append(run)
                condition.broadcast()
            }
        }
    }

    /// Throws SQLite's error if the read stopped before the last row (a damaged page): a
    /// reload that went on would take part of the world for all of it. Call after
    /// ``forEachRun(_:)``.
    func check(_ db: Database) throws {
        guard lastResult != SQLITE_DONE else { return }
        throw DatabaseError(resultCode: ResultCode(rawValue: lastResult),
                            message: db.sqliteConnection.map { String(cString: sqlite3_errmsg($0)) })
    }

    private func next() -> Run? {
        condition.withLock {
            while ready.isEmpty && !finished { condition.wait() }
            guard !ready.isEmpty else { return nil }
            condition.broadcast()   // the reader may wait for room
            return ready.removeFirst()
        }
    }

    /// The reading thread's loop. It is the pipeline's slower side (SQLite's steps): the
    /// rows go into local arrays, moved in and out of their run, so an append is not an
    /// access to a class's property each time.
    private func read(_ statement: OpaquePointer) {
        var run = takeSpare()
        var rows: [Row] = [], bytes: [UInt8] = []
        swap(&rows, &run.rows)
        swap(&bytes, &run.bytes)
        var result: Int32
        // (number, blob): an entity row; (number, type id, version, payload): a base row.
        let isEntityRow = sqlite3_column_count(statement) == 2
        let blobColumn: Int32 = isEntityRow ? 1 : 3
        while true {
            result = sqlite3_step(statement)
            guard result == SQLITE_ROW else { break }
            let payload = columnBlob(statement, blobColumn)
            rows.append(Row(number: sqlite3_column_int64(statement, 0),
                            typeID: isEntityRow ? 0 : sqlite3_column_int64(statement, 1),
                            version: isEntityRow ? 0 : Int(sqlite3_column_int64(statement, 2)),
                            start: bytes.count,
                            count: isEntityRow && sqlite3_column_type(statement, 1) == SQLITE_NULL ? Self.nullID : payload.count))
            bytes.append(contentsOf: payload)
            if rows.count == Self.rowsPerRun {
                swap(&rows, &run.rows)
                swap(&bytes, &run.bytes)
                hand(run)
                run = takeSpare()
                swap(&rows, &run.rows)
                swap(&bytes, &run.bytes)
            }
        }
        swap(&rows, &run.rows)
        swap(&bytes, &run.bytes)
        if !run.rows.isEmpty { hand(run) }
        condition.withLock {
            lastResult = result
            finished = true
            condition.broadcast()
        }
    }

    /// A run to fill: a spare one, or a new one while fewer than ``inFlight`` wait.
    private func takeSpare() -> Run {
        condition.withLock {
            while spare.isEmpty && ready.count >= Self.inFlight { condition.wait() }
            if let run = spare.popLast() { return run }
            let run = Run()
            run.rows.reserveCapacity(Self.rowsPerRun)
            return run
        }
    }

    private func hand(_ run: Run) {
        condition.withLock {
            ready.append(run)
            condition.broadcast()
        }
    }
}

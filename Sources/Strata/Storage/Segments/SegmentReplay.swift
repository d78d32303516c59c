import GRDB
import GRDBSQLite
import Logging

/// Reads the whole segment log in commit order at open, for the reload and for
/// `strata inspect`, and counts it into a ``SegmentLog`` on the way: rows, bytes,
/// records, the last id, the next seq. Which records are live (the newest of each key)
/// is the caller's to note: the reload does it in flat arrays, far cheaper than a
/// dictionary update per record.
///
/// Coded records (``XorCoding``) are passed on decoded, against the bases the replay keeps
/// as it goes (``SegmentBases``). Rows that cannot be read are counted, logged and
/// skipped; nothing is changed.
enum SegmentReplay {
    struct Outcome {
        var rows = 0
        var records = 0
        var unreadableRows = 0
        /// Coded records whose base the log no longer has (``SegmentReader``): skipped.
        var unresolvedRecords = 0
        /// The highest entity number any record names (numbers above it are free).
        var highestEntityNumber: EntityNumber = 0
    }

    /// Calls `apply` with every record of every readable row, oldest first, and the
    /// row's seq.
    /// `through` (Unix ms): only the rows written by then (the history window's past).
    /// `unresolved`: the key of each coded record whose base the log no longer has.
    static func run(_ db: Database, log: SegmentLog, logger: Logger, through: Int64? = nil,
                    unresolved: ((SegmentKey) -> Void)? = nil,
                    apply: (SegmentRecord, _ seq: Int64) throws -> Void) throws -> Outcome {
        var outcome = Outcome()
        let bases = SegmentBases(db)
        let statement = try db.makeStatement(sql: """
            SELECT id, format, record_count, checksum, records, created_at FROM segments
            \(through == nil ? "" : "WHERE created_at <= ?") ORDER BY id
            """)
        try withExtendedLifetime(statement) {
            let rows = statement.sqliteStatement
            if let through { sqlite3_bind_int64(rows, 1, through) }
            while true {
                let code = sqlite3_step(rows)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else { throw sqliteError(db) }
                let id = sqlite3_column_int64(rows, 0)
                let seq = Segment.seq(ofID: id)
                let records = columnBlob(rows, 4)
                let count = Segment.plausibleRecordCount(sqlite3_column_int64(rows, 2), bytes: records.count)
                log.noteRows(added: 1, bytes: records.count, records: count)
                log.noteRowTime(id: id, createdAt: sqlite3_column_int64(rows, 5), bytes: records.count)
                log.lastID = id
                log.nextSeq = max(log.nextSeq, seq + 1)
                outcome.rows += 1
                do {
                    try SegmentReader.forEachRecord(
                        format: Int(sqlite3_column_int64(rows, 1)), recordCount: count,
                        checksum: UInt32(truncatingIfNeeded: sqlite3_column_int64(rows, 3)), records: records,
                        base: bases.lookup, unresolved: { key in
                            outcome.unresolvedRecords += 1
                            // It names its entity all the same: the number must not be reused.
                            if key.entity <= World.highestEntityNumber {
                                outcome.highestEntityNumber = max(outcome.highestEntityNumber, key.entity)
                            }
                            unresolved?(key)
                        }
                    ) { record in
                        bases.note(record)
                        if record.key.entity <= World.highestEntityNumber {   // above: no entity's, ignored
                            outcome.highestEntityNumber = max(outcome.highestEntityNumber, record.key.entity)
                        }
                        try apply(record, seq)
                    }
                    outcome.records += count
                } catch let damage as SegmentDamage {
                    outcome.unreadableRows += 1
                    log.unreadableRows += 1
                    logger.error("segment \(id) cannot be read (\(damage)): kept untouched, not loaded")
                }
            }
        }
        return outcome
    }
}

import GRDB
import GRDBSQLite

/// Compaction steps on the writer's connection.
///
/// A step consumes the *front* of the segment log (the oldest rows, up to a byte
/// budget, never past the round's last row nor an unreadable row) in ONE transaction:
///
/// 0. it deletes the rows of despawned entities, a bounded number, and moves the spawns
///    that wait into `entities` (``PendingEntities``);
/// 1. it reads the rows and keeps the newest record of each key;
/// 2. it drops records of entities that are gone, and tombstones with no base row;
/// 3. *fold*: writes the rest into the base rows (`components`), in key order;
///    *merge*: writes them as one new segment under the seq of the last row consumed,
///    so the log keeps its order (a merge's next step consumes its output again);
/// 4. it deletes the consumed rows and counts the step in `compaction_state`.
///
/// Every step leaves a file whose reload gives the same world as before it: a crash or
/// a power cut between steps, or inside one, loses nothing and duplicates nothing.
/// Records of types this build does not know, or that it cannot decode, are moved
/// byte for byte: compaction never decodes a payload (a coded record is read whole,
/// against its base, and written whole: ``XorCoding``).
///
/// Writer thread. The caller commits the step's effect on ``SegmentLog`` through
/// ``StepResult/apply(to:)`` once the transaction has committed.
struct Compactor {
    /// A round: steps of one method until the rows that existed at its start are consumed.
    struct Round: Sendable {
        var method: CompactionPolicy.Method
        /// The newest row when the round began.
        var endID: Int64
        var steps = 0
        /// Asked for by `compactNow()`, serving its requests up to `ticket`.
        var forced = false
        var ticket = 0
    }

    /// What a step did.
    struct StepResult {
        var consumedRows = 0
        var consumedBytes = 0
        var consumedRecords = 0
        var lastConsumedID: Int64 = 0
        var outputRows = 0
        var outputBytes = 0
        var outputRecords = 0
        var outputLastID: Int64?
        /// The output rows' bytes (a merge's), and the time they carry.
        var outputSizes: [Int] = []
        var outputCreatedAt: Int64 = 0
        /// Waiting despawns whose rows the step deleted (step 0).
        var despawnsApplied = 0
        /// The spawns and despawns still waiting after the step (counted in it).
        var pendingAfter = (spawns: 0, despawns: 0)
        /// Keys written into base rows (fold), and base rows inserted or deleted by it.
        var keysFolded = 0
        var baseRowsInserted = 0
        var baseRowsDeleted = 0
        /// Every row of the round is consumed.
        var roundDone = false
        /// The front row cannot be read: nothing was consumed.
        var blockedBy: (id: Int64, damage: SegmentDamage)?
        /// Coded records of live entities whose base the log no longer has (a row before
        /// them was lost): nothing can decode them, and they went with their rows.
        var unresolvedDropped = 0
        /// Live keys after the step: kept (moved to the output's seq) or gone.
        fileprivate var kept: [SegmentKey] = []
        fileprivate var gone: [SegmentKey] = []
        fileprivate var consumedSeq: Int64 = 0

        /// Brings the writer's picture of the log up to date (after the commit).
        func apply(to log: SegmentLog) {
            log.noteRows(removed: consumedRows, bytes: consumedBytes, records: consumedRecords)
            log.noteRows(added: outputRows, bytes: outputBytes, records: outputRecords)
            for key in gone { log.forget(key, upTo: consumedSeq) }
            for key in kept { log.moveLive(key, upTo: consumedSeq, to: consumedSeq) }
            log.baseRows += baseRowsInserted - baseRowsDeleted
            (log.pendingSpawns, log.pendingDespawns) = pendingAfter
            if log.lastID == lastConsumedID { log.lastID = outputLastID }
            log.forgetRowTimes(through: lastConsumedID)
            for (part, bytes) in outputSizes.enumerated() {
                log.noteRowTime(id: Segment.id(seq: consumedSeq, part: part), createdAt: outputCreatedAt, bytes: bytes)
            }
        }
    }

    /// The newest record of a key within a step; its payload is copied into the step's arena.
    struct Newest {
        /// The payload in the arena; nil for a tombstone.
        var payload: Range<Int>?
        var version: Int
    }

    /// The most pending despawns one step applies. In a large world each one deletes from
    /// three random leaves (its row, its id, its base rows): 256 keep a step near a
    /// megabyte of WAL and a few tens of milliseconds even at a million entities; in a small
    /// world they share leaves, which is the saving.
    static let pendingDespawnsPerStep = 256

    /// Runs one step of `round`, consuming up to `budgetBytes` of records (at least one row).
    /// With `history`, records of entities despawned within the window are folded into
    /// their kept rows (`HistoryRows`) instead of dropped. The window's start moves up to
    /// the newest row consumed whatever `history` says (a window turned on later starts there).
    static func step(_ round: Round, budgetBytes: Int, history: Bool = false, _ db: Database) throws -> StepResult {
        var result = StepResult()
        var newest: [SegmentKey: Newest] = [:]
        var arena: [UInt8] = []
        var firstID: Int64?
        var lastCreatedAt: Int64 = 0
        var unresolved: [SegmentKey] = []
        // A coded record's base: its key's newest record in this step, else its base row
        // (earlier steps folded the rows before; a merge's output is consumed first).
        var baseRow: Statement?
        let base: SegmentReader.BaseLookup = { key, into in
            if let found = newest[key] {
                guard let payload = found.payload else { return false }
                into.removeAll(keepingCapacity: true)
                into.append(contentsOf: arena[payload])
                return true
            }
            return try SegmentBases.baseRow(key, of: db, statement: &baseRow, into: &into)
        }

        // 0. Despawns waiting for their rows to go, then spawns waiting for theirs
        //    (`PendingEntities`): before the alive check of step 2, so the records of the
        //    one are dropped with them and those of the other kept.
        let despawns = try PendingEntities.applyDespawns(limit: pendingDespawnsPerStep, db)
        result.despawnsApplied = despawns.despawns
        result.baseRowsDeleted += despawns.baseRows
        _ = try PendingEntities.promoteSpawns(db)
        result.pendingAfter = try PendingEntities.counts(db)
        let despawnsLeft = result.pendingAfter.despawns > 0

        // 1. The front rows, within the budget.
        let select = try db.makeStatement(sql: """
            SELECT id, format, record_count, checksum, created_at, records FROM segments WHERE id <= ? ORDER BY id
            """)
        try withExtendedLifetime(select) {
            let rows = select.sqliteStatement
            sqlite3_bind_int64(rows, 1, round.endID)
            while result.consumedBytes < budgetBytes || (round.method == .merge && result.consumedRows < 2) {
                let code = sqlite3_step(rows)
                if code == SQLITE_DONE { break }
                guard code == SQLITE_ROW else { throw sqliteError(db) }
                let id = sqlite3_column_int64(rows, 0)
                let createdAt = sqlite3_column_int64(rows, 4)
                let records = columnBlob(rows, 5)
                do {
                    try SegmentReader.forEachRecord(
                        format: Int(sqlite3_column_int64(rows, 1)), recordCount: Int(sqlite3_column_int64(rows, 2)),
                        checksum: UInt32(truncatingIfNeeded: sqlite3_column_int64(rows, 3)), records: records, base: base,
                        unresolved: { unresolved.append($0) }
                    ) { record in
                        var payload: Range<Int>?
                        if !record.isRemoval {
                            payload = arena.count ..< arena.count + record.payload.count
                            arena.append(contentsOf: record.payload)
                        }
                        newest[record.key] = Newest(payload: payload, version: record.version ?? 0)
                    }
                } catch let damage as SegmentDamage {
                    if result.consumedRows == 0 { result.blockedBy = (id, damage) }
                    break   // never consume past a row that cannot be read
                }
                firstID = firstID ?? id
                result.lastConsumedID = id
                lastCreatedAt = createdAt
                result.consumedRows += 1
                result.consumedBytes += records.count
                result.consumedRecords += Segment.plausibleRecordCount(sqlite3_column_int64(rows, 2), bytes: records.count)
            }
            sqlite3_reset(rows)   // no cursor stays open on the rows deleted below
        }
        guard let firstID else {
            // No row to consume (a round of despawns only, or the log is empty): done once
            // every despawn is applied.
            if result.blockedBy == nil { result.roundDone = !despawnsLeft }
            return result
        }
        result.consumedSeq = Segment.seq(ofID: result.lastConsumedID)
        result.roundDone = result.lastConsumedID >= round.endID && !despawnsLeft

        // 2. Records of entities that are gone are dropped; so are tombstones of keys
        //    without a base row (nothing left to delete).
        let entityExists = try db.cachedStatement(sql: "SELECT 1 FROM entities WHERE num = ?").sqliteStatement
        let baseExists = try db.cachedStatement(sql: "SELECT 1 FROM components WHERE entity_num = ? AND type_id = ?").sqliteStatement
        var aliveByNumber: [EntityNumber: Bool] = [:]
        var despawnedByNumber: [EntityNumber: Bool] = [:]
        var despawnedKeys: [SegmentKey] = []
        var keys: [SegmentKey] = []
        keys.reserveCapacity(newest.count)
        for (key, record) in newest {
            let alive = try aliveByNumber[key.entity] ?? {
                let found = try exists(entityExists, db) { sqlite3_bind_int64(entityExists, 1, key.entity) }
                aliveByNumber[key.entity] = found
                return found
            }()
            if !alive {
                let kept = try history && (despawnedByNumber[key.entity] ?? {
                    let found = try HistoryRows.isDespawnedInWindow(key.entity, db)
                    despawnedByNumber[key.entity] = found
                    return found
                }())
                if kept { despawnedKeys.append(key) }
                result.gone.append(key)
            } else if record.payload == nil, try !exists(baseExists, db, {
                sqlite3_bind_int64(baseExists, 1, key.entity)
                sqlite3_bind_int64(baseExists, 2, key.typeID)
            }) {
                result.gone.append(key)
            } else {
                keys.append(key)
            }
        }
        keys.sort()
        for key in unresolved {
            let alive = try aliveByNumber[key.entity] ?? exists(entityExists, db) { sqlite3_bind_int64(entityExists, 1, key.entity) }
            if alive { result.unresolvedDropped += 1 }
        }

        // 3 and 4: the consumed rows go first (a merge's output may take their ids).
        let delete = try db.cachedStatement(sql: "DELETE FROM segments WHERE id BETWEEN ? AND ?").sqliteStatement
        sqlite3_bind_int64(delete, 1, firstID)
        sqlite3_bind_int64(delete, 2, result.lastConsumedID)
        try stepDone(delete, db)

        try arena.withUnsafeBytes { arena in
            for key in despawnedKeys {
                guard let record = newest[key] else { continue }   // every key listed has its record
                try HistoryRows.fold(key, version: record.version, payload: record.payload.map { UnsafeRawBufferPointer(rebasing: arena[$0]) }, db)
            }
            switch round.method {
            case .fold:
                try fold(keys, newest, arena, db, &result)
                result.gone += keys
            case .merge:
                try merge(keys, newest, arena, seq: result.consumedSeq, createdAt: lastCreatedAt, db, &result)
                result.kept = keys
            }
        }
        try db.execute(sql: """
            UPDATE compaction_state SET steps = steps + 1,
                rounds = rounds + ?1, merges = merges + (?1 AND ?2 = 'merge'), folds = folds + (?1 AND ?2 = 'fold'),
                last_round_at = CASE WHEN ?1 THEN ?3 ELSE last_round_at END
            WHERE id = 1
            """, arguments: [result.roundDone ? 1 : 0, round.method.rawValue, unixMilliseconds()])
        try HistoryRows.advanceFloor(to: lastCreatedAt, db)
        return result
    }

    /// Whether a `SELECT 1 …` statement returns a row, after `bind`.
    private static func exists(_ statement: OpaquePointer, _ db: Database, _ bind: () -> Void) throws -> Bool {
        bind()
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_ROW || code == SQLITE_DONE else { throw sqliteError(db) }
        return code == SQLITE_ROW
    }
}

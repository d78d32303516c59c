import Foundation
import GRDB

/// Never drop a batch. A commit that fails for a reason retrying cannot fix (a
/// constraint, a value too big) is split in halves, recursively, until the rows that fail
/// on their own are isolated; the rest commits, in order, and the rejected rows are parked
/// (``RejectedWrite``): in `rejected_writes`, or in the side file `PATH.rejected` when the
/// database refuses them too. Only when both fail is a row lost, and then it is counted
/// (`lostRows`) and logged as critical.
///
/// Writer thread.
extension Writer {
    /// Commits `batch`, which failed with the permanent `error`, with its rejected rows
    /// isolated and parked. Returns the rows not yet committed if a transient error (a full
    /// disk, an I/O error) interrupts: the caller puts them back and retries them.
    func isolateRejectedRows(_ batch: WriteBatch, error: StoreError) -> WriteBatch? {
        batch.coalesce()   // the rows are counted and sliced as they commit
        let total = batch.rowCount
        var done = 0   // rows before it are committed or parked
        var parked = 0
        // Depth first, in order: a range commits whole, or splits; a row that fails alone is parked.
        func isolate(_ range: Range<Int>, knownFailure: StoreError?) -> Bool {
            var failure = knownFailure
            let part = batch.slice(range)
            if failure == nil {
                do {
                    try commitRecorded(part)
                    done = range.upperBound
                    return true
                } catch {
                    let storeError = StoreError(.write, wrapping: error, path: store.location.path)
                    if Self.isTransient(storeError) { return false }
                    failure = storeError
                }
            }
            if range.count == 1, let failure {
                parked += park(part, error: failure, context: batch)
                done = range.upperBound
                return true
            }
            let middle = range.lowerBound + range.count / 2
            return isolate(range.lowerBound ..< middle, knownFailure: nil) && isolate(middle ..< range.upperBound, knownFailure: nil)
        }
        let finished = isolate(0 ..< total, knownFailure: error)
        logger.error("writer: a batch of \(total) rows failed (\(error)); \(parked) rows rejected and parked, \(done - parked) committed\(finished ? "" : ", \(total - done) left to retry")")
        return finished ? nil : batch.slice(done ..< total)
    }

    /// Parks every row of `batch`: in `rejected_writes` if the database takes them, else in
    /// the side file. `context`: the batch they came from (for entity ids). Returns the rows
    /// parked (a replayed rejection's deletion is not a row to park).
    @discardableResult
    func park(_ batch: WriteBatch, error: StoreError, context: WriteBatch) -> Int {
        let rows = rejectedWrites(batch, error: error, context: context)
        guard !rows.isEmpty else { return 0 }
        do {
            try store.withConnection { db in
                try db.inTransaction {
                    for row in rows {
                        try executeChecked(db, """
                            INSERT INTO rejected_writes (rejected_at, error, kind, entity, entity_num, name, number, payload,
                                                         operation_id, timestamp)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """, [.int(row.rejectedAt), .text(row.error), .text(row.kind.rawValue),
                                  row.entity.map { id in .blob(id.withBytes { Array($0) }) } ?? .null,
                                  row.entityNumber.map { .int($0) } ?? .null, row.name.map { .text($0) } ?? .null,
                                  row.number.map { .int($0) } ?? .null, row.payload.map { .blob($0) } ?? .null,
                                  row.operationID.map { id in .blob(id.withBytes { Array($0) }) } ?? .null,
                                  row.timestamp.map { .int($0) } ?? .null])
                    }
                    return .commit
                }
            }
            metrics.update { $0.rejectedRows += rows.count }
        } catch {
            parkInSideFile(rows, because: StoreError(.write, wrapping: error, path: store.location.path))
        }
        return rows.count
    }

    /// Appends `rows` to `PATH.rejected`, one JSON object per line, synced. Returns what
    /// happened to them: every sentence about these rows is made from it.
    @discardableResult
    func parkInSideFile(_ rows: [RejectedWrite], because reason: StoreError) -> ParkOutcome {
        let path = store.location.rejectedPath
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var data = Data()
        var unencodable = 0
        for row in rows {
            guard let line = try? encoder.encode(row) else { unencodable += 1; continue }
            data.append(line)
            data.append(UInt8(ascii: "\n"))
        }
        let encoded = rows.count - unencodable
        var failure: String?
        if encoded > 0 {
            let fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            // A line torn by a crash mid-append stays a line of its own (SideFile keeps it).
            var last = UInt8(ascii: "\n")
            let size = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0
            if size > 0, pread(fd, &last, 1, size - 1) == 1, last != UInt8(ascii: "\n") {
                data.insert(UInt8(ascii: "\n"), at: 0)
            }
            if fd < 0 {
                failure = "\(path) could not be opened: \(String(cString: strerror(errno)))"
            } else {
                let wrote = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if wrote != data.count {
                    failure = wrote < 0 ? "\(path) could not be written: \(String(cString: strerror(errno)))"
                        : "\(path) took \(wrote) of \(data.count) bytes (the disk is full?)"
                } else if fsync(fd) != 0 {
                    failure = "\(path) could not be synced: \(String(cString: strerror(errno)))"
                }
                close(fd)
            }
        }
        let outcome = ParkOutcome(parked: failure == nil ? encoded : 0, lost: (failure == nil ? 0 : encoded) + unencodable,
                                  path: path, failure: failure ?? (unencodable > 0 ? "\(unencodable) rows could not be encoded" : nil))
        if outcome.parked > 0 {
            logger.error("writer: the database refused \(outcome.parked) rows (\(reason)); parked in \(path)")
        }
        if outcome.lost > 0 {
            logger.critical("writer: \(outcome.lost) rows LOST: the database refused them (\(reason)) and \(outcome.failure ?? path)")
        }
        metrics.update {
            $0.rejectedRows += outcome.parked
            $0.rejectedRowsInSideFile += outcome.parked
            $0.lostRows += outcome.lost
        }
        return outcome
    }

    /// The rows of `batch` as ``RejectedWrite``s.
    func rejectedWrites(_ batch: WriteBatch, error: StoreError, context: WriteBatch) -> [RejectedWrite] {
        let now = settings.wallClock()
        let message = error.description
        var ids: [EntityNumber: EntityID] = [:]
        for insert in context.entityInserts { ids[insert.number] = insert.id }
        func id(_ number: EntityNumber) -> EntityID? {
            if let known = ids[number] { return known }
            return try? store.withConnection { db in
                try Data.fetchOne(db, sql: """
                    SELECT \(EntityIDColumn.sql()) FROM entities WHERE num = ?1
                    UNION ALL SELECT id FROM pending_entities WHERE num = ?1 AND id IS NOT NULL
                    """,
                                  arguments: [number])
                    .flatMap { data in data.withUnsafeBytes { EntityID(bytes: $0) } }
            }
        }
        return BatchSection.allCases.flatMap { $0.rejected(in: batch, now: now, error: message, entityID: id) }
    }
}

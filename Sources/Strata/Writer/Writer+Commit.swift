import Foundation
import GRDB
import GRDBSQLite

extension Writer {
    /// After `batch` committed: who waits is told (operations, the commit, deletions), the
    /// WAL checkpointed if it is due, the requests that waited for a batch run again.
    func committed(_ batch: WriteBatch) {
        let deleted = batch.entityDeletes.isEmpty ? nil : batch.entityDeletes
        if !batch.operations.isEmpty { buffer.notifyCommitted(batch.operations) }
        checkpointIfNeeded(forced: batch.checkpointAfter)
        buffer.didCommit(batch)
        if let deleted { buffer.notifyDeleted(deleted) }
        serveDeferredRequests()
    }

    /// Commits `batch`, or puts it back for a retry. Returns false if it must be retried.
    /// The caller reports the sequence committed (after any checkpoint it triggers).
    func commitWithRetry(_ batch: WriteBatch) -> Bool {
        guard !batch.isEmpty else { return true }   // e.g. a checkpoint request with nothing to write
        do {
            try commitRecorded(batch)
            let failures = schedule.succeeded()
            if failures > 0 {
                logger.notice("writer: batch of \(batch.rowCount) rows committed after \(failures) failed attempts")
                metrics.update {
                    $0.rowsCommittedLate += batch.rowCount
                    $0.rowsHeld = 0
                }
            }
            return true
        } catch {
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            metrics.update {
                $0.failedCommits += 1
                $0.lastWriteError = storeError.description
            }
            if reportIfCorrupt(storeError) {
                buffer.putBack(batch)   // the engine takes it from there
                return false
            }
            if Self.isTransient(storeError) {
                if (storeError.sqliteCode ?? 0) & 0xFF == SQLITE_FULL {
                    // The WAL may hold the space: copy it back and truncate it before the retry.
                    checkpoint(.truncate)
                }
                logger.warning("writer: commit of \(batch.rowCount) rows failed (attempt \(schedule.failures + 1)), will retry: \(storeError)")
                metrics.update { $0.rowsHeld = batch.rowCount }
                buffer.putBack(batch)
                return false
            }
            // Retrying cannot help: commit what can be, park what cannot (Writer+Rejection.swift).
            // The requests riding the batch go to the request lane: the slices do not carry
            // them (one that needs a row of the batch waits there for it).
            for rider in batch.riders where !buffer.submit(rider) { rider.finish(WriterRequestError.closed) }
            batch.riders.removeAll()
            if let remainder = isolateRejectedRows(batch, error: storeError) {
                buffer.putBack(remainder)
                return false
            }
            schedule.succeeded()
            return true
        }
    }

    /// Commits `batch` and records it in the metrics and with the observer.
    func commitRecorded(_ batch: WriteBatch) throws {
        let started = clock.now()
        let counts = try commit(batch)
        let elapsed = clock.now().duration(since: started)
        let walBytes = store.location.walBytes
        let limit = maxWalBytes
        let log = segmentLog
        let sections = BatchSection.allCases.map { ($0.kind.rawValue, $0.count(in: batch)) }
        metrics.update {
            $0.commitCount += 1
            for (kind, rows) in sections where rows > 0 { $0.rowsCommittedByKind[kind, default: 0] += rows }
            if batch.durability == .full { $0.fullCommitCount += 1 }
            $0.add(counts)
            $0.recordBacklog(log)
            $0.totalCommitDuration += elapsed
            $0.maxCommitDuration = max($0.maxCommitDuration, elapsed)
            if batch.rowCount <= PersistenceMetrics.routineCommitRows {
                $0.maxRoutineCommitDuration = max($0.maxRoutineCommitDuration, elapsed)
            }
            $0.walSizeBytes = walBytes
            $0.maxWalSizeBytes = max($0.maxWalSizeBytes, walBytes)
            if walBytes > limit && walBytes > $0.walPastLimitBytes {
                $0.walPastLimitBytes = walBytes
                $0.walLimitBytes = limit
            }
        }
        metrics.timers.commit(batch.durability, took: elapsed)
        observer?.didCommit(CommitRecord(drained: batch.drainedAt, committedAt: started + elapsed,
                                         durability: batch.durability, rows: batch.rowCount, reasons: batch.reasons))
    }

    /// An SQLite error that is the machine's trouble (``isTransient(_:)``), not one
    /// statement's: a request that meets it fails with its whole group or batch.
    static func isMachineTrouble(_ error: any Error) -> Bool {
        guard let sqlite = error as? DatabaseError else { return false }
        return isTransient(StoreError(.write, wrapping: sqlite, path: ""))
    }

    /// SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN,
    /// SQLITE_NOMEM: conditions of the machine, worth retrying. SQLITE_CORRUPT and
    /// SQLITE_NOTADB never get here (``reportIfCorrupt(_:)``: the engine replaces the
    /// file); listed so that a rejection never parks rows in a damaged file.
    static func isTransient(_ error: StoreError) -> Bool {
        guard let code = error.sqliteCode.map({ $0 & 0xFF }) else { return true }
        return [SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_NOMEM,
                SQLITE_PROTOCOL, SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_NOTADB].contains(code)
    }

    /// ONE transaction: every part of the batch, in the order of ``parts`` (``BatchSection``'s),
    /// with the strictest durability the batch asks for.
    /// A bulk batch (``WriteBatch/isBulk``) commits through a rollback journal (`Writer+Bulk.swift`).
    func commit(_ batch: WriteBatch) throws -> CommitCounts {
        var counts = CommitCounts()
        counts.committedAt = settings.wallClock()
        var riderErrors: [Error?] = []
        do {
            try store.withConnection { db in
                if walModeLost { returnToWAL(db) }
                let bulk = batch.isBulk && !context.checkpoints.held && leaveWAL(db)   // a backup copying the file: through the WAL
                defer { if bulk { returnToWAL(db) } }
                try db.committing(bulk ? .full : batch.durability) {
                    try db.inTransaction(.immediate) {
                        for part in parts { try part.write(batch, db, &counts) }
                        riderErrors = try batch.riders.map { try $0.rideBatch(db) }
                        return .commit
                    }
                }
            }
        } catch {
            for part in parts { part.didRollBack() }
            throw error
        }
        for part in parts { part.didCommit() }
        for (rider, error) in zip(batch.riders, riderErrors) { rider.finish(error) }
        if !batch.riders.isEmpty { metrics.update { $0.writerRequests += batch.riders.count } }
        return counts
    }
}

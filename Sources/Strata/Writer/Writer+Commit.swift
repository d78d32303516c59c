import Foundation
import GRDB
import GRDBSQLite

/// `SQLITE_STATIC`: SQLite may use the bound bytes until the statement is reset;
/// every bind below is stepped and reset inside the closure that lends the bytes.
private let SQLITE_STATIC = unsafeBitCast(0, to: sqlite3_destructor_type.self)

extension Writer {
    /// Commits `batch`, or puts it back for a retry. Returns false if it must be retried.
    /// The caller reports the sequence committed (after any checkpoint it triggers).
    func commitWithRetry(_ batch: WriteBatch) -> Bool {
        guard !batch.isEmpty else { return true }   // e.g. a checkpoint request with nothing to write
        let started = clock.now()
        do {
            let rows = try commit(batch)
            let elapsed = clock.now().duration(since: started)
            let walBytes = store.location.walBytes
            metrics.update {
                $0.commitCount += 1
                if batch.durability == .full { $0.fullCommitCount += 1 }
                $0.componentRowsWritten += rows.upserts
                $0.componentRowsDeleted += rows.deletes
                $0.entityRowsInserted += batch.entityInserts.count
                $0.entityRowsDeleted += batch.entityDeletes.count
                $0.payloadBytesWritten += rows.payloadBytes
                $0.totalCommitDuration += elapsed
                $0.maxCommitDuration = max($0.maxCommitDuration, elapsed)
                $0.walSizeBytes = walBytes
                $0.maxWalSizeBytes = max($0.maxWalSizeBytes, walBytes)
            }
            if consecutiveFailures > 0 {
                logger.notice("writer: batch committed after \(consecutiveFailures) failed attempts")
            }
            observer?.didCommit(CommitRecord(drained: batch.drainedAt, committedAt: started + elapsed,
                                             durability: batch.durability, rows: batch.rowCount, reasons: batch.reasons))
            consecutiveFailures = 0
            return true
        } catch {
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            consecutiveFailures += 1
            metrics.update {
                $0.failedCommits += 1
                $0.lastWriteError = storeError.description
            }
            if Self.isTransient(storeError) {
                logger.warning("writer: commit of \(batch.rowCount) rows failed (attempt \(consecutiveFailures)), will retry: \(storeError)")
                buffer.putBack(batch)
                return false
            }
            // Retrying a constraint or schema error cannot succeed: say so loudly and move on.
            logger.error("writer: dropping a batch of \(batch.rowCount) rows after a permanent error: \(storeError)")
            metrics.update { $0.abandonedRows += batch.rowCount }
            consecutiveFailures = 0
            return true
        }
    }

    /// SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN,
    /// SQLITE_NOMEM: conditions of the machine, worth retrying.
    static func isTransient(_ error: StoreError) -> Bool {
        guard let code = error.sqliteCode.map({ $0 & 0xFF }) else { return true }
        return [SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_NOMEM,
                SQLITE_PROTOCOL, SQLITE_READONLY].contains(code)
    }

    struct RowCounts {
        var upserts = 0
        var deletes = 0
        var payloadBytes = 0
    }

    /// One transaction: entity deletes, entity inserts, component writes, in that order.
    private func commit(_ batch: WriteBatch) throws -> RowCounts {
        var counts = RowCounts()
        var provisionalTypeIDs: [(UInt32, Int64)] = []
        try store.withConnection { db in
            let full = batch.durability == .full
            if full { try db.execute(sql: "PRAGMA synchronous = FULL") }
            defer { if full { try? db.execute(sql: "PRAGMA synchronous = NORMAL") } }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            try db.inTransaction(.immediate) {
                if !batch.entityDeletes.isEmpty {
                    let delete = try db.cachedStatement(sql: "DELETE FROM entities WHERE id = ?").sqliteStatement
                    for id in batch.entityDeletes {
                        try id.withBytes { bytes in
                            sqlite3_bind_blob(delete, 1, bytes.baseAddress, 16, SQLITE_STATIC)
                            try step(delete, db)
                        }
                    }
                }
                if !batch.entityInserts.isEmpty {
                    let insert = try db.cachedStatement(
                        sql: "INSERT INTO entities (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING").sqliteStatement
                    for id in batch.entityInserts {
                        try id.withBytes { bytes in
                            sqlite3_bind_blob(insert, 1, bytes.baseAddress, 16, SQLITE_STATIC)
                            sqlite3_bind_int64(insert, 2, now)
                            try step(insert, db)
                        }
                    }
                }
                guard !batch.writes.isEmpty else { return .commit }
                let upsert = try db.cachedStatement(sql: """
                    INSERT INTO components (entity_id, type_id, version, payload, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (entity_id, type_id) DO UPDATE SET
                        version = excluded.version, payload = excluded.payload, updated_at = excluded.updated_at
                    """).sqliteStatement
                let delete = try db.cachedStatement(
                    sql: "DELETE FROM components WHERE entity_id = ? AND type_id = ?").sqliteStatement
                for write in batch.writes {
                    let typeID = try typeID(for: write, db, provisional: &provisionalTypeIDs)
                    if let value = write.value {
                        payload.reset()
                        value.encode(to: &payload)
                        counts.upserts += 1
                        counts.payloadBytes += payload.bytes.count
                        let version = Int64(type(of: value).payloadVersion)
                        try write.entity.withBytes { id in
                            try payload.bytes.withUnsafeBytes { bytes in
                                sqlite3_bind_blob(upsert, 1, id.baseAddress, 16, SQLITE_STATIC)
                                sqlite3_bind_int64(upsert, 2, typeID)
                                sqlite3_bind_int64(upsert, 3, version)
                                // A zero-length blob needs a non-null pointer to stay a blob, not NULL.
                                sqlite3_bind_blob(upsert, 4, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), SQLITE_STATIC)
                                sqlite3_bind_int64(upsert, 5, now)
                                try step(upsert, db)
                            }
                        }
                    } else {
                        counts.deletes += 1
                        try write.entity.withBytes { id in
                            sqlite3_bind_blob(delete, 1, id.baseAddress, 16, SQLITE_STATIC)
                            sqlite3_bind_int64(delete, 2, typeID)
                            try step(delete, db)
                        }
                    }
                }
                return .commit
            }
        }
        for (index, id) in provisionalTypeIDs { setTypeID(id, at: index) }
        return counts
    }

    /// The `component_types.id` of a write's type, interning the name on first use.
    /// Ids resolved inside a transaction are kept only once it commits.
    private func typeID(for write: ComponentWrite, _ db: Database, provisional: inout [(UInt32, Int64)]) throws -> Int64 {
        let index = Int(write.typeIndex)
        if index < typeIDs.count, let id = typeIDs[index] { return id }
        if let pending = provisional.first(where: { $0.0 == write.typeIndex }) { return pending.1 }
        let id = try Self.internTypeName(write.typeName, db)
        provisional.append((write.typeIndex, id))
        return id
    }

    private func setTypeID(_ id: Int64, at index: UInt32) {
        let i = Int(index)
        if typeIDs.count <= i { typeIDs.append(contentsOf: repeatElement(nil, count: i + 1 - typeIDs.count)) }
        typeIDs[i] = id
    }

    static func internTypeName(_ name: String, _ db: Database) throws -> Int64 {
        try db.execute(sql: "INSERT INTO component_types (name) VALUES (?) ON CONFLICT (name) DO NOTHING", arguments: [name])
        return try Int64.fetchOne(db, sql: "SELECT id FROM component_types WHERE name = ?", arguments: [name])!
    }
}

/// Steps a statement that returns no rows, then resets it.
@inline(__always)
private func step(_ statement: OpaquePointer, _ db: Database) throws {
    let code = sqlite3_step(statement)
    sqlite3_reset(statement)
    guard code == SQLITE_DONE else {
        throw DatabaseError(resultCode: ResultCode(rawValue: sqlite3_extended_errcode(db.sqliteConnection)),
                            message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
    }
}

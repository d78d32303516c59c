import Foundation
import GRDB

/// The outbox: this replica's operations the server has not acknowledged, and the sync's
/// bookkeeping (`sync_state`, `sync_failures`). Nothing is copied: the operation log holds
/// the operations; the outbox is those above `pushed_through`, plus the ones in
/// `sync_failures` (refused by the server, waiting for their next attempt, or dead letters).
///
/// Any thread: every call is a request on the writer (``WriterLane``), so it reads what
/// is committed and writes between the tick thread's batches. Used by `SyncClient` and
/// ``Engine/syncStatus()``.
struct SyncOutbox: Sendable {
    let lane: WriterLane
    let node: NodeID
    let server: String

    /// What ``next(limit:now:backoff:)`` found.
    struct Batch: Sendable {
        /// The operations to push, in sequence order.
        var operations: [LoggedOperation] = []
        /// This replica's operations that could not be pushed because their rows do not
        /// read (damage) or are gone: dead letters now, and the outbox goes on past them.
        var parked: [Int64] = []
    }

    /// Why a parked operation is a dead letter, as `strata sync status` shows it.
    static let unreadableError = "its row in this device's log does not read (damaged) or is gone: not pushed"

    /// The next operations to push, in sequence order: the failed ones due again (their
    /// backoff passed), then new ones, `limit` in all. A row that does not read becomes a
    /// dead letter at once (``Batch/parked``): skipped silently, it would hold
    /// `pushed_through` below it, and every later push would send the same operations again.
    func next(limit: Int, now: Int64, backoff: @escaping @Sendable (Int) -> Duration) throws -> Batch {
        let node = node
        return try lane.perform(.normal) { db in
            var due: [Int64] = []
            for row in try Row.fetchAll(db, sql: "SELECT seq, attempts, last_attempt_at FROM sync_failures WHERE dead_at IS NULL ORDER BY seq") {
                // A failure whose counts do not read is due now: pushed again, not forgotten.
                guard let seq = row.value("seq", as: Int64.self) else { continue }
                let attempts = row.value("attempts", as: Int.self) ?? 0, last = row.value("last_attempt_at", as: Int64.self) ?? 0
                if last &+ Int64(backoff(max(attempts, 0)).milliseconds) <= now { due.append(seq) }
                if due.count == limit { break }
            }
            var batch = Batch()
            for seq in due {
                if let operation = try Row.fetchOne(db, sql: "\(StoredOperation.localSQL) WHERE seq = ?", arguments: [seq])
                    .flatMap(OperationLogReader.operation), operation.node == node {
                    batch.operations.append(operation)
                } else {
                    batch.parked.append(seq)
                }
            }
            // This replica's rows from their table, not the view: a range of its key, in its order.
            let fresh = try OperationLogReader.operations(of: node.withBytes { Data($0) }, after: try Self.pushedThrough(db),
                                                          limit: limit - batch.operations.count, db)
            batch.operations += fresh.operations
            batch.parked += fresh.unreadable
            if !batch.parked.isEmpty { try park(batch.parked, now: now, db) }
            return batch
        }
    }

    /// Makes `seqs` dead letters (``unreadableError``) and moves `pushed_through` over them.
    private func park(_ seqs: [Int64], now: Int64, _ db: Database) throws {
        try ensureState(db, serverNode: nil)
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO sync_failures (seq, attempts, last_error, last_attempt_at, dead_at) VALUES (?, 0, ?, ?, ?)
            ON CONFLICT (seq) DO UPDATE SET last_error = excluded.last_error, last_attempt_at = excluded.last_attempt_at,
                                            dead_at = excluded.dead_at
            """)
        for seq in seqs { try upsert.execute(arguments: [seq, Self.unreadableError, now, now]) }
        try advance(db, past: seqs)
    }

    /// The server has `operations`: they leave the outbox. Returns the sequence through
    /// which the server has every operation of this replica (below the first failure).
    func acknowledge(_ operations: [LoggedOperation], server: SyncServerInfo, now: Int64) throws -> Int64 {
        let seqs = operations.map(\.seq)
        return try lane.perform(.normal) { db in
            try ensureState(db, serverNode: server.node)
            for seq in seqs { try db.execute(sql: "DELETE FROM sync_failures WHERE seq = ?", arguments: [seq]) }
            try advance(db, past: seqs)
            try db.execute(sql: "UPDATE sync_state SET last_push_at = ?, last_error = NULL WHERE id = 1", arguments: [now])
            let through = try Self.pushedThrough(db)
            let firstFailure = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM sync_failures")
            return firstFailure.map { min(through, $0 - 1) } ?? through
        }
    }

    /// The server refused `operation` (alone: the client isolates a refused batch): one
    /// more attempt, and a dead letter after `maxAttempts`. Returns true if it is dead now.
    @discardableResult
    func refuse(_ operation: LoggedOperation, error: String, maxAttempts: Int, now: Int64) throws -> Bool {
        try lane.perform(.full) { db in
            try ensureState(db, serverNode: nil)
            try db.execute(sql: """
                INSERT INTO sync_failures (seq, attempts, last_error, last_attempt_at) VALUES (?, 1, ?, ?)
                ON CONFLICT (seq) DO UPDATE SET attempts = attempts + 1, last_error = excluded.last_error, last_attempt_at = excluded.last_attempt_at
                """, arguments: [operation.seq, error, now])
            try db.execute(sql: "UPDATE sync_failures SET dead_at = ? WHERE seq = ? AND attempts >= ?", arguments: [now, operation.seq, maxAttempts])
            try advance(db, past: [operation.seq])
            try db.execute(sql: "UPDATE sync_state SET last_error = ?, last_error_at = ? WHERE id = 1",
                           arguments: ["operation \(operation.seq) refused: \(error)", now])
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_failures WHERE seq = ? AND dead_at IS NOT NULL", arguments: [operation.seq]) == 1
        }
    }

    /// A push or pull that failed as a whole (the server unreachable…): said in the status.
    func noteError(_ message: String, now: Int64) throws {
        try lane.perform(.normal) { db in
            try ensureState(db, serverNode: nil)
            try db.execute(sql: "UPDATE sync_state SET last_error = ?, last_error_at = ? WHERE id = 1", arguments: [message, now])
            return ()
        }
    }

    func notePull(now: Int64) throws {
        try lane.perform(.normal) { db in
            try ensureState(db, serverNode: nil)
            try db.execute(sql: "UPDATE sync_state SET last_pull_at = ? WHERE id = 1", arguments: [now])
            return ()
        }
    }

    /// Dead letters become ordinary failures with no attempts: pushed at the next turn.
    func retryDeadLetters() throws -> Int {
        try lane.perform(.full) { db in
            try db.execute(sql: "UPDATE sync_failures SET dead_at = NULL, attempts = 0, last_attempt_at = 0 WHERE dead_at IS NOT NULL")
            return db.changesCount
        }
    }

    func status() throws -> SyncStatus {
        let node = node.withBytes { Data($0) }
        return try lane.perform(.normal) { db in try Self.status(db, node: node) }
    }

    /// The status from any connection (``SyncStatus/read(path:)`` reads a file nobody has open).
    /// `countReceived`: also count the other devices' operations in the log (a scan: the
    /// command line's status only, not the engine's, which metrics read often).
    static func status(_ db: Database, node: Data, countReceived: Bool = false) throws -> SyncStatus {
        var status = SyncStatus()
        guard try db.tableExists("sync_state") else { return status }
        if countReceived {
            status.receivedOperations = try Int.fetchOne(db, sql: "SELECT count(*) FROM operation_log WHERE node <> ?", arguments: [node])
        }
        let through = try pushedThrough(db)
        status.pending = try Int.fetchOne(db, sql: "SELECT count(*) FROM operation_log WHERE node = ? AND seq > ?", arguments: [node, through]) ?? 0
        for row in try Row.fetchAll(db, sql: "SELECT seq, attempts, last_error, last_attempt_at, dead_at FROM sync_failures ORDER BY seq") {
            let failure = SyncStatus.Failure(sequence: try row.decode(forColumn: "seq"), attempts: row.value("attempts") ?? 0,
                                             lastError: row.value("last_error") ?? "", lastAttemptAt: row.value("last_attempt_at") ?? 0,
                                             deadAt: row.value("dead_at"))
            if failure.deadAt == nil { status.failing.append(failure) } else { status.deadLetters.append(failure) }
        }
        if let row = try Row.fetchOne(db, sql: "SELECT * FROM sync_state WHERE id = 1") {
            status.server = row.value("server") ?? ""
            status.pushedThrough = row.value("pushed_through") ?? 0
            status.lastPushAt = row.value("last_push_at")
            status.lastPullAt = row.value("last_pull_at")
            status.lastError = row.value("last_error")
            status.lastErrorAt = row.value("last_error_at")
        }
        return status
    }

    private static func pushedThrough(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT pushed_through FROM sync_state WHERE id = 1") ?? 0
    }

    private func ensureState(_ db: Database, serverNode: NodeID?) throws {
        try db.execute(sql: "INSERT INTO sync_state (id, server) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET server = excluded.server",
                       arguments: [server])
        if let serverNode {
            try db.execute(sql: "UPDATE sync_state SET server_node = ? WHERE id = 1", arguments: [serverNode.withBytes { Data($0) }])
        }
    }

    /// Moves `pushed_through` over `seqs` and any run after it that is settled (acknowledged
    /// or in `sync_failures`): the outbox is what lies above it, plus the failures.
    private func advance(_ db: Database, past seqs: [Int64]) throws {
        var through = try Self.pushedThrough(db)
        var settled = Set(seqs)
        for seq in try Int64.fetchAll(db, sql: "SELECT seq FROM sync_failures WHERE seq > ?", arguments: [through]) { settled.insert(seq) }
        while settled.contains(through + 1) { through += 1 }
        try db.execute(sql: "UPDATE sync_state SET pushed_through = max(pushed_through, ?) WHERE id = 1", arguments: [through])
    }
}

/// What ``Engine/syncStatus()`` and `strata sync status` show.
public struct SyncStatus: Sendable, Equatable, Codable {
    public struct Failure: Sendable, Equatable, Codable {
        public var sequence: Int64
        public var attempts: Int
        public var lastError: String
        public var lastAttemptAt: Int64
        /// When it became a dead letter (Unix ms); nil while it is still retried.
        public var deadAt: Int64?
    }

    /// The server last synced with ("" if never).
    public var server = ""
    /// This replica's operations not pushed yet.
    public var pending = 0
    /// Refused by the server, to be pushed again.
    public var failing: [Failure] = []
    /// Refused `max_attempts` times: kept until `strata sync retry`.
    public var deadLetters: [Failure] = []
    public var pushedThrough: Int64 = 0
    public var lastPushAt: Int64?
    public var lastPullAt: Int64?
    public var lastError: String?
    public var lastErrorAt: Int64?
    /// Other devices' operations in the log (what pulls brought; a device joining a large
    /// document sees it grow). Counted by ``read(path:)`` only; nil elsewhere.
    public var receivedOperations: Int?

    /// Operations the server does not have: pending, failing and dead.
    public var outboxCount: Int { pending + failing.count + deadLetters.count }

    public init() {}
}

extension SyncStatus {
    /// The sync status of the document at `path`, read without changing it (through a
    /// read-only connection: a running engine may have it open).
    public static func read(path: String) throws -> SyncStatus {
        try StoreLocation(path: path).readExisting { db in
            let node = try Data.fetchOne(db, sql: "SELECT node_id FROM replica WHERE id = 1") ?? Data()
            return try SyncOutbox.status(db, node: node, countReceived: true)
        }
    }
}

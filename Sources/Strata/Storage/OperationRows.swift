import Foundation
import GRDB
import GRDBSQLite

/// The operation log and the vector clock: a row per operation, this replica's in
/// `local_operations` (keyed by its sequence) and the others' in `received_operations`
/// (appended; one whose (node, seq) is there already is ignored), the vector clock's
/// changed entries in `vector_clock`, after the operations they may claim, and peers'
/// acknowledgements in `peer_acks`, after which retention runs. Writer thread.
final class OperationRowsPart: BatchPart {
    let sections: [BatchSection] = [.operations, .vectorClock, .peerAcks]

    let retention: OperationLogConfig
    /// This replica's node id, read from `replica` at the first write (it does not change
    /// while the document is open: only a restore gives a document a new one).
    private var localNode: NodeID?

    /// See ``dropAcknowledged(_:olderThan:)``.
    static let dropsPerNodeAndBatch: Int64 = 10_000

    init(retention: OperationLogConfig) { self.retention = retention }

    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        if !batch.operations.isEmpty {
            let local = try localNode(db)
            // Bound by hand, like the entity rows: no Data or StatementArguments per row.
            let insertLocal = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO local_operations (seq, id, timestamp, kind, payload, type, entity) VALUES (?, ?, ?, ?, ?, ?, ?)
                """).sqliteStatement
            let insertReceived = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO received_operations (node, seq, id, timestamp, kind, payload, logged_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """).sqliteStatement
            let now = counts.committedAt
            var types = TypeNumbers()
            for operation in batch.operations {
                let isLocal = operation.node == local
                let insert = isLocal ? insertLocal : insertReceived
                let first: Int32 = isLocal ? 1 : 2
                let code = isLocal ? OperationKindCode.code(of: operation.kind) : nil
                // This replica's component rows (schema 21): the type by number, its name left out of the payload;
                // the entity by number where its id is made from one (schema 24), its id left out.
                var type: Int64?, entity: Int64?
                var stored = operation.payload
                if code == OperationKindCode.component {
                    if let short = StoredOperation.withoutName(operation.payload), let number = try types.number(of: short.name, db) {
                        (type, stored) = (number, short.stored)
                    }
                    if let local, let short = StoredOperation.withoutEntity(stored, node: local) { (entity, stored) = (short.number, short.stored) }
                }
                // SQLITE_STATIC binds: every buffer stays valid until the step, inside the closures.
                try operation.node.withBytes { node in
                    try operation.id.withBytes { id in
                        try stored.withUnsafeBytes { payload in
                            try operation.kind.withCString { kind in
                                if !isLocal { try bindBlob(insert, 1, node) }
                                sqlite3_bind_int64(insert, first, operation.seq)
                                // This replica's rows (schema 21): no id where it is made from the sequence.
                                if isLocal, StoredOperation.derivedID(node: operation.node, seq: operation.seq) == operation.id {
                                    sqlite3_bind_null(insert, first + 1)
                                } else {
                                    try bindBlob(insert, first + 1, id)
                                }
                                sqlite3_bind_int64(insert, first + 2, operation.timestamp.rawValue)
                                // This replica's rows: Strata's kinds as codes, no `logged_at` (schema 17).
                                if let code {
                                    sqlite3_bind_int64(insert, first + 3, code)
                                } else {
                                    try checkBind(sqlite3_bind_text(insert, first + 3, kind, -1, SQLITE_STATIC), first + 3)
                                }
                                try bindBlob(insert, first + 4, payload)
                                if !isLocal {
                                    sqlite3_bind_int64(insert, first + 5, now)
                                } else {
                                    if let type { sqlite3_bind_int64(insert, first + 5, type) } else { sqlite3_bind_null(insert, first + 5) }
                                    if let entity { sqlite3_bind_int64(insert, first + 6, entity) } else { sqlite3_bind_null(insert, first + 6) }
                                }
                                try stepDone(insert, db)
                            }
                        }
                    }
                }
                let inserted = Int(sqlite3_changes(db.sqliteConnection))
                counts.operations += inserted
                counts.operationPayloadBytes += inserted * operation.payload.count
                if !isLocal {
                    counts.receivedOperationPayloadBytes += inserted * operation.payload.count
                } else if OperationKindCode.code(of: operation.kind) != nil {
                    counts.derivedOperationPayloadBytes += inserted * operation.payload.count
                }
            }
        }
        if !batch.vectorClockRows.isEmpty {
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO vector_clock (node, seq) VALUES (?, ?) ON CONFLICT (node) DO UPDATE SET seq = excluded.seq
                """)
            for (node, seq) in batch.vectorClockRows {
                try upsert.execute(arguments: [node.withBytes { Data($0) }, seq])
            }
            counts.vectorClockRows += batch.vectorClockRows.count
        }
        if !batch.peerAcks.isEmpty {
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO peer_acks (peer, node, seq) VALUES (?, ?, ?)
                ON CONFLICT (peer, node) DO UPDATE SET seq = max(seq, excluded.seq)
                """)
            for ack in batch.peerAcks {
                try upsert.execute(arguments: [ack.peer.withBytes { Data($0) }, ack.node.withBytes { Data($0) }, ack.seq])
            }
            if retention.retention == .acknowledged {
                // The commit's wall clock: the one this replica's timestamps (whose milliseconds
                // are its operations' `logged_at`) come from.
                counts.operationsDropped += try dropAcknowledged(db, olderThan: counts.committedAt - Int64(retention.retentionMinAge.milliseconds))
            }
        }
    }

    /// Drops, per node, the operations every known peer has acknowledged, logged before
    /// `cutoff` (Unix ms), and never past the persisted vector clock (what this replica
    /// itself holds contiguously), except the despawns of replicated entities (their
    /// tombstones). Moves the node's floor up to the last one dropped, so the clock
    /// rebuilt at open still counts them. Returns how many were dropped.
    ///
    /// A peer is known once it has acknowledged anything; a node some known peer has not
    /// acknowledged at all keeps everything. At most ``dropsPerNodeAndBatch`` operations of
    /// a node go per batch, so that a large backlog never makes one commit long: the
    /// floor moves on with the next acknowledgements.
    private func dropAcknowledged(_ db: Database, olderThan cutoff: Int64) throws -> Int {
        let rows = try Row.fetchAll(db, sql: """
            SELECT a.node AS node, min(a.seq) AS acked, count(*) AS peers, coalesce(c.seq, 0) AS held,
                   coalesce(f.seq, 0) AS floor,
                   (SELECT min(seq) FROM operation_log o WHERE o.node = a.node AND o.logged_at > ?) AS young
            FROM peer_acks a
            LEFT JOIN vector_clock c ON c.node = a.node
            LEFT JOIN operation_floor f ON f.node = a.node
            GROUP BY a.node
            """, arguments: [cutoff])
        let known = try Int.fetchOne(db, sql: "SELECT count(DISTINCT peer) FROM peer_acks") ?? 0
        var dropped = 0
        for row in rows {
            // A value that does not read (damage, or another type planted there) keeps that
            // node's operations: nothing is dropped on a guess.
            guard row.value("peers", as: Int.self) == known, let acked = row.value("acked", as: Int64.self),
                  let held = row.value("held", as: Int64.self), let floor = row.value("floor", as: Int64.self),
                  let node = row.value("node", as: Data.self) else { continue }
            let young = row.value("young", as: Int64.self)
            var cut = min(acked, held, floor &+ Self.dropsPerNodeAndBatch)
            if let young { cut = min(cut, young - 1) }
            guard cut > floor else { continue }
            // A replicated entity's despawn is its tombstone: it stays (below the floor, where
            // the clock's rebuild and the log's summary do not look for sequences).
            if node.withUnsafeBytes({ NodeID(bytes: $0) }) == (try localNode(db)) {
                try db.execute(sql: "DELETE FROM local_operations WHERE seq <= ? AND NOT (\(OperationKindCode.despawnSQL))",
                               arguments: [cut])
            } else {
                try db.execute(sql: "DELETE FROM received_operations WHERE node = ? AND seq <= ? AND kind <> ?",
                               arguments: [node, cut, ReplicatedOperation.despawnKind])
            }
            dropped += db.changesCount
            try db.execute(sql: """
                INSERT INTO operation_floor (node, seq) VALUES (?, ?) ON CONFLICT (node) DO UPDATE SET seq = excluded.seq
                """, arguments: [node, cut])
        }
        return dropped
    }

    private func localNode(_ db: Database) throws -> NodeID? {
        if localNode == nil {
            localNode = try EntityIDColumn.node(db)
        }
        return localNode
    }

    func didCommit() {}
    func didRollBack() {}
}

/// The `component_types` numbers of the type names this replica's operations carry, for
/// one batch: operations come in runs of one type, so the last name asked is kept.
/// Writer thread.
private struct TypeNumbers {
    private var last: (name: [UInt8], number: Int64?)?

    /// The number of the type whose name is `name` (UTF-8), nil if the table has no such
    /// name (its operations keep the name in their payload).
    mutating func number(of name: ArraySlice<UInt8>, _ db: Database) throws -> Int64? {
        if let last, last.name.elementsEqual(name) { return last.number }
        // Bytes that are not UTF-8 would come back repaired: such a name stays in the payload.
        let text = String(decoding: name, as: UTF8.self)
        let number = text.utf8.elementsEqual(name)
            ? try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM component_types WHERE name = ?"), arguments: [text]) : nil
        last = ([UInt8](name), number)
        return number
    }
}

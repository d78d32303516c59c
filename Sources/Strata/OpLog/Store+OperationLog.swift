import Foundation
import GRDB
import GRDBSQLite

/// What opening found in the operation log.
public struct OperationLogSummary: Sendable, Equatable {
    /// This replica's node id (created on the document's first open with an operation log).
    public var node: NodeID?
    public var operations = 0
    /// Nodes with operations logged.
    public var nodes = 0
    /// Ranges of missing sequences, over every node.
    public var gaps = 0
    /// Where the persisted vector clock differed from the one rebuilt from the log (one
    /// line per node): repaired at the first critical flush.
    public var vectorClockRepairs: [String] = []
}

extension Store {
    /// This replica's sequence numbers are never used twice. Its operations are appended
    /// in order, so a hole in them, or a tail shorter than what the server acknowledged, is
    /// either an operation a commit refused, parked to be logged again (`rejected_writes` or
    /// the side file: its hole stays, for the replay to fill), or a damaged page the salvage
    /// could not read. What a lost one held may be on the server and on other devices
    /// already, and an operation logged again under its number would be a duplicate there,
    /// never applied. So the lost numbers count as logged (nothing here can bring them back;
    /// a device that has them keeps them), and the next operation goes above every number
    /// used: the log's highest, the retention floor, the server's `pushed_through`, the parked
    /// ones (`highest`). Returns that, and the line that says what was lost (nil: nothing).
    static func skipLostOwnSequences(of node: NodeID, clock: inout [NodeID: Int64], beyond: inout [NodeID: Set<Int64>],
                                     floor: Int64, parked: Set<Int64>, _ db: Database) throws -> (highest: Int64, lost: String?) {
        // A number past the highest a log may hold is damage: not counted on.
        let pushed = try db.tableExists("sync_state")
            ? try Int64.fetchOne(db, sql: "SELECT pushed_through FROM sync_state WHERE id = 1 AND pushed_through <= ?",
                                 arguments: [OperationLog.highestSequence]) ?? 0 : 0
        let parked = parked.filter { $0 <= OperationLog.highestSequence }
        let above = beyond[node] ?? []
        let contiguous = clock[node] ?? 0
        let highest = max(contiguous, above.max() ?? 0, floor, pushed, parked.max() ?? 0)
        // The holes between the numbers logged or parked above the prefix, up to `highest`:
        // a walk over those numbers, not over every number in between.
        var holes: [ClosedRange<Int64>] = []
        var next = contiguous + 1
        for seq in above.union(parked).filter({ $0 >= next && $0 <= highest }).sorted() {
            if seq > next { holes.append(next ... seq - 1) }
            next = seq + 1
        }
        if next <= highest { holes.append(next ... highest) }
        guard !holes.isEmpty else { return (highest, nil) }
        let count = holes.reduce(Int64(0)) { $0 + $1.upperBound - $1.lowerBound + 1 }
        var missing = holes.prefix(10).map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)…\($0.upperBound)" }
        if holes.count > 10 { missing.append("and \(holes.count - 10) more runs") }
        // The prefix stops at the first parked hole; what is above it counts as logged.
        // Above it, the clock keeps each number one by one: past a million, the parked holes
        // close too (their replay still logs them: a number counted already is queued again).
        var prefix = parked.filter { $0 > contiguous && $0 <= highest }.min().map { $0 - 1 } ?? highest
        var closed = ""
        if highest - prefix > Self.mostNumbersAboveAParkedHole {
            closed = "; the parked ones among them are counted as logged too (their replay logs them)"
            prefix = highest
        }
        clock[node] = prefix
        let rest = prefix < highest ? Set((prefix + 1 ... highest).filter { !parked.contains($0) }) : []
        beyond[node] = rest.isEmpty ? nil : rest
        return (highest, "this replica's operations \(missing.joined(separator: ", ")) (\(count)) are missing from the log and "
            + "not parked: their numbers are not used again, the next operation is \(highest + 1)\(closed)")
    }

    /// The most numbers ``skipLostOwnSequences(of:clock:beyond:floor:parked:_:)`` keeps one
    /// by one above a parked hole.
    static let mostNumbersAboveAParkedHole: Int64 = 1 << 20

    /// The sequences of this replica's parked operations (`rejected_writes` and the side
    /// file): holes in its log that a replay fills.
    static func parkedOwnSequences(of node: NodeID, in location: StoreLocation, _ db: Database) throws -> Set<Int64> {
        var parked = Set(try Int64.fetchAll(db, sql: "SELECT number FROM rejected_writes WHERE kind = 'operation' AND entity = ?",
                                            arguments: [node.withBytes { Data($0) }]))
        for row in Engine.sideFileRows(location.rejectedPath) where row.kind == .operation && row.entity == node {
            if let seq = row.number { parked.insert(seq) }
        }
        return parked
    }

    /// Reads this replica's node id (creating it on first open), then, on a read-only
    /// connection and a thread of their own, rebuilds the vector clock and the gaps from
    /// the operation log (the specification's recovery: "load operation log → rebuild
    /// vector clock"), and compares the clock with the persisted one: the log is the
    /// truth, a differing entry is reported and written again. The opening thread
    /// rebuilds the world meanwhile (a big document's log, two million operations, takes
    /// about 0.3 s) and waits for the result; nothing else writes the file while it
    /// opens (the writer starts after).
    ///
    /// Operations dropped by retention (below a node's `operation_floor`) count as
    /// logged. Reads `(node, seq, timestamp)` in key order, never a payload: O(log) at open.
    func loadOperationLog(wallClock: @escaping @Sendable () -> Int64,
                          maxSkewMilliseconds: Int64 = 300_000) throws -> Aside<(OperationLog, OperationLogSummary)> {
        let node: NodeID
        let reader: DatabaseQueue
        do {
            node = try replicaNode()
            reader = try location.readOnlyQueue()
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
        let location = location
        return Aside(name: "strata.oplog") {
            defer { try? reader.close() }
            do {
                return try reader.read { db in
                    try Self.readOperationLog(node: node, in: location, wallClock: wallClock, maxSkewMilliseconds: maxSkewMilliseconds, db)
                }
            } catch {
                throw StoreError(.read, wrapping: error, path: location.path)
            }
        }
    }

    /// This replica's node id, made and stored on the first open. A file whose `replica`
    /// row is gone but whose copy of it is not (schema 25) gets the copy's node back, so
    /// the ids made from it keep their values; a copy that differs from a row that reads
    /// is written again.
    private func replicaNode() throws -> NodeID {
        try queue.writeWithoutTransaction { db -> NodeID in
            // A copy that does not read (another type planted there) is no reason not to open.
            let copy = (try? EntityIDColumn.node(db, in: "replica_copy")) ?? nil
            if let node = try EntityIDColumn.node(db) {
                // A copy that went missing or was damaged is written again from the row.
                if copy != node {
                    try db.execute(sql: "INSERT OR REPLACE INTO replica_copy (id, node_id) VALUES (1, ?)",
                                   arguments: [node.withBytes { Data($0) }])
                }
                return node
            }
            let node = copy ?? NodeID()
            try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, ?)",
                           arguments: [node.withBytes { Data($0) }, unixMilliseconds()])
            return node
        }
    }

    /// The log's reading part of ``loadOperationLog(wallClock:maxSkewMilliseconds:)``, in `db`'s read transaction.
    private static func readOperationLog(node: NodeID, in location: StoreLocation, wallClock: @escaping @Sendable () -> Int64,
                                         maxSkewMilliseconds: Int64, _ db: Database) throws -> (OperationLog, OperationLogSummary) {
        var clock: [NodeID: Int64] = [:]
        var beyond: [NodeID: Set<Int64>] = [:]
        var counts: [NodeID: Int] = [:]
        var lastTimestamp: Int64 = 0
        // Operations dropped by retention count as logged: a node's prefix starts above its floor.
        var floors: [NodeID: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT node, seq FROM operation_floor") {
            guard let seq = row.value("seq", as: Int64.self), seq >= 0, seq <= OperationLog.highestSequence else { continue }   // damage
            if let id = OperationLogReader.node(row) { floors[id] = seq }
        }
        // The newest timestamp, not a peer's beyond the allowed skew (a peer's wrong clock:
        // see OperationLog.receive), but every one of this replica's own: its clock never
        // goes back, even when the wall clock did (set back while it was off), so that its
        // next edit still wins over its last one. Then the keys alone.
        let bound = HybridTimestamp(milliseconds: wallClock() &+ maxSkewMilliseconds, counter: 0xFFFF).rawValue
        let peers = try Int64.fetchOne(db, sql: "SELECT max(timestamp) FROM received_operations WHERE timestamp <= ?",
                                       arguments: [bound]) ?? 0
        lastTimestamp = max(peers, try Self.newestOwnTimestamp(db))
        // This replica's sequences, when nothing is missing among them: their count and
        // ends say it, without a step per row (a big document's log is millions of rows).
        var walks = ["SELECT node, seq FROM received_operations ORDER BY node, seq"]
        if let run = try Self.unbrokenOwnRun(floor: floors[node] ?? 0, db) {
            if run.count > 0 { (clock[node], counts[node]) = (run.through, run.count) }
        } else {
            walks.insert("SELECT replica.node_id, seq FROM replica, local_operations WHERE replica.id = 1 ORDER BY seq", at: 0)
        }
        // Each node's sequences in order: this replica's by its table's key (unless its
        // run was unbroken), then the received by their (node, seq) index.
        for sql in walks {
            let statement = try db.makeStatement(sql: sql)
            defer { withExtendedLifetime(statement) {} }
            let rows = statement.sqliteStatement
            var current: (bytes: [UInt8], id: NodeID)?
            var contiguous: Int64 = 0
            func finish() {
                guard let current else { return }
                clock[current.id] = contiguous
            }
            while sqlite3_step(rows) == SQLITE_ROW {
                let bytes = columnBlob(rows, 0)
                if let running = current, running.bytes.elementsEqual(bytes) {} else {
                    finish()
                    guard let id = NodeID(bytes: bytes) else { current = nil; continue }
                    current = (Array(bytes), id)
                    contiguous = floors[id] ?? 0
                }
                guard let n = current?.id else { continue }
                let seq = sqlite3_column_int64(rows, 1)
                counts[n, default: 0] += 1
                // At or below the floor: a tombstone retention kept (its sequence is counted
                // already); past the highest a log may hold: damage, not counted on.
                if seq <= (floors[n] ?? 0) || seq > OperationLog.highestSequence { continue }
                if seq == contiguous + 1 && beyond[n] == nil { contiguous = seq } else { beyond[n, default: []].insert(seq) }
            }
            finish()
        }
        for (n, floor) in floors where clock[n] == nil { clock[n] = floor }

        var summary = OperationLogSummary(node: node, operations: counts.values.reduce(0, +), nodes: counts.count)
        let own = try Self.skipLostOwnSequences(of: node, clock: &clock, beyond: &beyond, floor: floors[node] ?? 0,
                                                parked: try parkedOwnSequences(of: node, in: location, db), db)
        if let lost = own.lost { summary.vectorClockRepairs.append(lost) }
        var persisted: [NodeID: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT node, seq FROM vector_clock") {
            if let id = OperationLogReader.node(row), let seq = row.value("seq", as: Int64.self) { persisted[id] = seq }
        }
        var toWrite: Set<NodeID> = []
        for n in Set(clock.keys).union(persisted.keys).sorted(by: { $0.description < $1.description }) {
            let rebuilt = clock[n] ?? 0, stored = persisted[n] ?? 0
            guard rebuilt != stored else { continue }
            summary.vectorClockRepairs.append("node \(n): persisted \(stored), rebuilt from the log \(rebuilt)")
            clock[n] = rebuilt
            toWrite.insert(n)
        }
        let log = OperationLog(node: node, vectorClock: clock, beyond: beyond, highestOwn: own.highest,
                               lastTimestamp: HybridTimestamp(rawValue: lastTimestamp), clockToWrite: toWrite, wallClock: wallClock)
        log.maxSkewMilliseconds = maxSkewMilliseconds
        summary.gaps = log.gaps.values.reduce(0) { $0 + $1.count }
        return (log, summary)
    }
}

extension Store {
    /// This replica's operations as the walk in ``loadOperationLog(wallClock:maxSkewMilliseconds:)``
    /// would count them, when they are every sequence from one at or below `floor + 1` to the
    /// highest (none missing, none past the highest a log may hold): how many, and through
    /// which one the prefix runs. Nil: something is missing or out of range, and the walk
    /// counts them row by row. The count walks the table's pages without a step per row; the
    /// ends are read from its key.
    static func unbrokenOwnRun(floor: Int64, _ db: Database) throws -> (count: Int, through: Int64)? {
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM local_operations") ?? 0
        guard count > 0 else { return (0, floor) }
        guard let first = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM local_operations"),
              let last = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM local_operations"),
              first >= 1, last <= OperationLog.highestSequence, first <= floor &+ 1,
              Int64(count) == last - first + 1 else { return nil }
        return (count, max(floor, last))
    }

    /// The timestamp of this replica's newest operation. Its clock never goes back (each
    /// operation is stamped above the one before it, and an open starts above every stamp
    /// logged), so that is its highest sequence's: read from the table's key, not a scan.
    /// One past ``OperationLog/latestPlausibleTimestamp`` is damage, passed over.
    static func newestOwnTimestamp(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT timestamp FROM local_operations WHERE timestamp <= ? ORDER BY seq DESC LIMIT 1",
                           arguments: [OperationLog.latestPlausibleTimestamp]) ?? 0
    }

    /// The ids of the replicated entities despawned on any device: the `strata.despawn`
    /// operations still in the log (its retention is theirs). A malformed one is skipped
    /// (the apply reported it when it came).
    func readReplicaTombstones() throws -> Set<EntityID> {
        try queue.read { db in
            var ids = Set<EntityID>()
            // The tables, not the view: each one's despawns' partial index answers its half.
            for payload in try Data.fetchAll(db, sql: """
                SELECT payload FROM local_operations WHERE \(OperationKindCode.despawnSQL)
                UNION ALL SELECT payload FROM received_operations WHERE kind = ?
                """, arguments: [ReplicatedOperation.despawnKind]) {
                if let operation = try? ReplicatedOperation(kind: ReplicatedOperation.despawnKind, payload: Array(payload)) {
                    ids.insert(operation.entity)
                }
            }
            return ids
        }
    }
}

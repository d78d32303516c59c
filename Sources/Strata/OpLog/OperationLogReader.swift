import Foundation
import GRDB
import GRDBSQLite

/// Reads the committed operation log for anti-entropy and tools, from any thread,
/// through its own read-only connection: in WAL mode it never waits for the writer and
/// the writer never waits for it. Operations still waiting for a critical flush are not
/// visible until they commit.
///
/// ```swift
/// let reader = try OperationLogReader(path: path)
/// var page = try reader.missing(for: peerClock, limit: 500)        // what the peer lacks
/// while let next = page.next { send(page.operations); page = try reader.missing(for: peerClock, from: next) }
/// ```
package final class OperationLogReader: Sendable {
    private let queue: DatabaseQueue
    public let path: String
    /// The WAL companions that existed before the reader opened (removed at its end if it made them).
    private let companionsBefore: (wal: Bool, shm: Bool)

    /// Opens `path` read-only. Throws if it is missing or has no operation log.
    public init(path: String) throws {
        let location = StoreLocation(path: path)
        self.path = location.path
        guard FileManager.default.fileExists(atPath: location.path) else {
            throw StoreError(.open, message: "no database file", path: location.path)
        }
        companionsBefore = location.companions
        do {
            queue = try location.readOnlyQueue()
            let kind = try queue.read { try DocumentKind.classify($0) }
            if case .foreign(let why) = kind {
                throw StoreError(.foreign, message: "not a Strata document (\(why))", path: location.path)
            }
            guard try queue.read({ try $0.operationLogExists() }) else {
                throw StoreError(.read, message: "no operation log (a document of schema 3 or later has one)", path: location.path)
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
    }

    deinit {
        try? queue.close()
        StoreLocation(path: path).removeCompanionsMadeByReading(before: companionsBefore)
    }

    /// Where a paged read goes on: after `sequence` of `node`, then the nodes after it.
    public struct Cursor: Sendable, Equatable {
        public var node: NodeID
        public var sequence: Int64
    }

    public struct Page: Sendable, Equatable {
        /// In (node, sequence) order; nodes in the order of their bytes.
        public var operations: [LoggedOperation]
        /// Where the next page starts; nil when this one reached the end.
        public var next: Cursor?
        /// Operations the peer lacks that retention has dropped (every peer known then had
        /// acknowledged them): a peer this far behind needs a copy of the document, not a log.
        public var unavailable: [NodeID: ClosedRange<Int64>] = [:]
        /// The sequences, by node, of this page's rows that do not read (a damaged file):
        /// passed over, so that the page still holds `limit` operations if the log has them.
        public var unreadable: [NodeID: [Int64]] = [:]
    }

    /// The operations a peer whose vector clock is `clock` lacks: every operation of each
    /// node above the peer's entry for it (all of a node the peer does not know), `limit`
    /// at a time. A peer's entry is its contiguous prefix, so operations it holds above a
    /// gap of its own come again: receiving deduplicates them.
    public func missing(for clock: [NodeID: Int64], from cursor: Cursor? = nil, limit: Int = 500) throws -> Page {
        precondition(limit > 0, "a page holds at least one operation")
        return try read { db in
            var operations: [LoggedOperation] = []
            var unavailable: [NodeID: ClosedRange<Int64>] = [:]
            var unreadable: [NodeID: [Int64]] = [:]
            for (node, floor) in try Self.floors(db) where floor > (clock[node] ?? 0) {
                unavailable[node] = (clock[node] ?? 0) + 1 ... floor
            }
            let start = cursor.map { $0.node.withBytes { Data($0) } } ?? Data()
            for nodeBytes in try Data.fetchAll(db, sql: "SELECT DISTINCT node FROM operation_log WHERE node >= ? ORDER BY node", arguments: [start]) {
                guard let node = nodeBytes.withUnsafeBytes({ NodeID(bytes: $0) }) else { continue }
                var floor = clock[node] ?? 0   // rows at or below a retention floor are gone anyway
                if let cursor, cursor.node == node { floor = max(floor, cursor.sequence) }
                let read = try Self.operations(of: nodeBytes, after: floor, limit: limit - operations.count, db)
                operations += read.operations
                if !read.unreadable.isEmpty { unreadable[node, default: []] += read.unreadable }
                if operations.count == limit, let last = operations.last {
                    return Page(operations: operations, next: Cursor(node: last.node, sequence: last.seq), unavailable: unavailable,
                                unreadable: unreadable)
                }
            }
            return Page(operations: operations, next: nil, unavailable: unavailable, unreadable: unreadable)
        }
    }

    /// Operations of `node` after `sequence`, in order, at most `limit`.
    public func operations(of node: NodeID, after sequence: Int64 = 0, limit: Int = 500) throws -> [LoggedOperation] {
        try read { db in try Self.operations(of: node.withBytes { Data($0) }, after: sequence, limit: limit, db).operations }
    }

    /// One node's operations as ``operations(of:after:limit:_:)`` reads them: those that
    /// read, and the sequences of the rows that do not (damage: a type number
    /// `component_types` no longer names, a value of the wrong type), skipped but named.
    struct NodeRows {
        var operations: [LoggedOperation] = []
        var unreadable: [Int64] = []
    }

    /// Operations of `node` after `sequence`, in order, `limit` of them unless the node has
    /// fewer, read from the node's own table: this replica's from `local_operations`
    /// (``StoredOperation/localSQL``), a range of its key, another node's from
    /// `received_operations` by its (node, seq) index. The view would sort every row of the
    /// node above `sequence` to give the first few (a page from the middle of a
    /// two-million-operation log took seconds). A file of a schema before 21, read as it is,
    /// is read through its view.
    ///
    /// A row that does not read is passed over and its sequence kept in ``NodeRows/unreadable``,
    /// and the read goes on until `limit` operations did: a page that came back short would
    /// tell a caller that pages on (``missing(for:from:limit:)``, the outbox) that the node
    /// ends there, and what lies after it would never be sent.
    static func operations(of node: Data, after sequence: Int64, limit: Int, _ db: Database) throws -> NodeRows {
        let sql: String
        let local: Bool
        if try StoredOperation.isStoredShort(db) {
            local = try Data.fetchOne(db, sql: "SELECT node_id FROM replica WHERE id = 1") == node
            sql = local
                ? "\(StoredOperation.localSQL) WHERE seq > ? ORDER BY seq LIMIT ?"
                : "SELECT node, seq, id, timestamp, kind, payload FROM received_operations WHERE node = ? AND seq > ? ORDER BY seq LIMIT ?"
        } else {
            local = false
            sql = "SELECT node, seq, id, timestamp, kind, payload FROM operation_log WHERE node = ? AND seq > ? ORDER BY seq LIMIT ?"
        }
        var read = NodeRows()
        var after = sequence
        while read.operations.count < limit {
            let wanted = limit - read.operations.count
            let arguments: StatementArguments = local ? [after, wanted] : [node, after, wanted]
            let rows = try Row.fetchAll(db, sql: sql, arguments: arguments)
            let start = after
            for row in rows {
                // A sequence that is no integer (damage) cannot be paged past: it is left out,
                // and if nothing else moved the read on, the read ends (below).
                guard let seq = row.value("seq", as: Int64.self) else { continue }
                after = max(after, seq)
                if let operation = Self.operation(row) { read.operations.append(operation) } else { read.unreadable.append(seq) }
            }
            if rows.count < wanted || after == start { break }
        }
        return read
    }

    /// What the log holds of one node.
    public struct NodeSummary: Sendable, Equatable {
        public var count: Int
        public var highest: Int64
        /// The vector clock's entry as persisted (nil: none yet).
        public var vectorClock: Int64?
        /// Missing sequences below `highest` (not counting those retention dropped).
        public var gaps: [ClosedRange<Int64>]
        /// Operations through this sequence were dropped by retention (0: none).
        public var dropped: Int64 = 0
    }

    /// Per node: operations logged, the highest sequence, the persisted clock, the gaps.
    /// One pass over the log's key (no payload is read).
    public func summary() throws -> [NodeID: NodeSummary] {
        try read { db in
            var result: [NodeID: NodeSummary] = [:]
            let floors = try Self.floors(db)
            for (node, floor) in floors {
                result[node] = NodeSummary(count: 0, highest: floor, vectorClock: nil, gaps: [], dropped: floor)
            }
            // Rows at or below a node's floor are tombstones retention kept (despawns): counted,
            // never a gap.
            for row in try Row.fetchAll(db, sql: """
                SELECT o.node AS node, count(*) AS n, max(o.seq) AS highest,
                       min(CASE WHEN o.seq > coalesce(f.seq, 0) THEN o.seq END) AS lowest
                FROM operation_log o LEFT JOIN operation_floor f ON f.node = o.node GROUP BY o.node
                """) {
                guard let node = Self.node(row) else { continue }
                let lowest: Int64? = row.value("lowest"), floor = floors[node] ?? 0
                let gaps: [ClosedRange<Int64>] = if let lowest, lowest > floor + 1 { [floor + 1 ... lowest - 1] } else { [] }
                result[node] = NodeSummary(count: row.value("n") ?? 0, highest: max(row.value("highest") ?? 0, floor), vectorClock: nil,
                                           gaps: gaps, dropped: floor)
            }
            // A gap follows every sequence whose successor in the log is not the next one.
            for row in try Row.fetchAll(db, sql: """
                SELECT node, seq, next FROM (
                    SELECT o.node AS node, o.seq AS seq, lead(o.seq) OVER (PARTITION BY o.node ORDER BY o.seq) AS next
                    FROM operation_log o LEFT JOIN operation_floor f ON f.node = o.node
                    WHERE o.seq > coalesce(f.seq, 0)
                ) WHERE next > seq + 1
                """) {
                guard let node = Self.node(row), let seq = row.value("seq", as: Int64.self), let next = row.value("next", as: Int64.self),
                      seq < Int64.max, next > seq + 1 else { continue }
                result[node]?.gaps.append(seq + 1 ... next - 1)
            }
            for row in try Row.fetchAll(db, sql: "SELECT node, seq FROM vector_clock") {
                guard let node = Self.node(row) else { continue }
                result[node, default: NodeSummary(count: 0, highest: 0, vectorClock: nil, gaps: [])].vectorClock = row.value("seq")
            }
            return result
        }
    }

    /// This replica's node id (nil in a document never opened by a build with a log).
    public func nodeID() throws -> NodeID? {
        try read { db in
            try Data.fetchOne(db, sql: "SELECT node_id FROM replica WHERE id = 1").flatMap { $0.withUnsafeBytes { NodeID(bytes: $0) } }
        }
    }

    private static func floors(_ db: Database) throws -> [NodeID: Int64] {
        guard try db.tableExists("operation_floor") else { return [:] }
        var floors: [NodeID: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT node, seq FROM operation_floor") {
            if let node = Self.node(row), let seq = row.value("seq", as: Int64.self) { floors[node] = seq }
        }
        return floors
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try queue.read(body)
        } catch {
            throw StoreError(.read, wrapping: error, path: path)
        }
    }

    /// The `node` column of `row` as a node id: nil if it is NULL (this replica's rows while
    /// the `replica` row is missing), not a blob, or not 16 bytes.
    static func node(_ row: Row) -> NodeID? {
        row.value("node", as: Data.self).flatMap { $0.withUnsafeBytes { NodeID(bytes: $0) } }
    }

    /// An `operation_log` row (node, seq, id, timestamp, kind, payload) as an operation; nil
    /// if a value does not read (the row stays in the file). A kind stored as an integer
    /// that is no code of Strata's (`OperationKindCode`) reads as its digits.
    static func operation(_ row: Row) -> LoggedOperation? {
        guard let node = node(row),
              let id = row.value("id", as: Data.self).flatMap({ $0.withUnsafeBytes { EntityID(bytes: $0) } }),
              let seq = row.value("seq", as: Int64.self), let timestamp = row.value("timestamp", as: Int64.self),
              let kind = row.value("kind", as: String.self) ?? row.value("kind", as: Int64.self).map({ String($0) }),
              let payload = row.value("payload", as: Data.self) else { return nil }
        return LoggedOperation(id: id, node: node, seq: seq, timestamp: HybridTimestamp(rawValue: timestamp), kind: kind,
                               payload: Array(payload))
    }
}

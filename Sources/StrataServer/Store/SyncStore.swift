import Foundation
import Logging
import StrataPQ
import StrataWire

/// The service's queries, each one round trip on a pooled connection: who may do what,
/// push as a subject, pull by position.
struct SyncStore: Sendable {
    let pool: DatabasePool

    /// Creates or upgrades the schema; the server's node id and version strings.
    func prepare() async throws -> (node: UUID, schemaVersion: Int, server: String) {
        try await pool.run { connection in
            let (node, version, server) = try SyncSchema.prepare(connection)
            return (node, version, server)
        }
    }

    /// ``prepare()``, tried again while the database is out of reach (backing off to 5 s
    /// between tries, said in the log) for at most `wait`; any other error at once.
    func prepare(waiting wait: Duration, logger: Logger) async throws -> (node: UUID, schemaVersion: Int, server: String) {
        let clock = ContinuousClock()
        let deadline = clock.now + wait
        var pause = Duration.milliseconds(250)
        while true {
            do {
                return try await prepare()
            } catch let error as PGConnectionError where error.kind == .unreachable && clock.now + pause < deadline {
                logger.warning("the database does not answer yet, trying again in \(pause): \(error)")
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            }
        }
    }

    /// The role of `subject` on `document`, nil for a stranger.
    func role(of subject: String, on document: String) async throws -> Role? {
        let rows = try await pool.run { connection in
            try connection.query("SELECT role FROM strata_members WHERE document = $1 AND subject = $2", [document, subject])
        }
        return rows.first?.first.flatMap { $0 }.flatMap(Role.init(rawValue:))
    }

    /// Stores `operations` as pushed by `subject`: all or none. Throws `PGError` with
    /// ``SyncSchema/nodeTakenState`` when a node belongs to another subject.
    func push(_ operations: [SyncWire.Operation], document: String, subject: String) async throws -> Int {
        let parameters: [String?] = [
            document, subject,
            PGText.array(operations.map { $0.id.uuidString }),
            PGText.array(operations.map { $0.node.uuidString }),
            PGText.array(operations.map(\.seq)),
            PGText.array(operations.map(\.hlc)),
            PGText.textArray(operations.map(\.kind)),
            PGText.byteaArray(operations.map { [UInt8]($0.payload) }),
        ]
        let rows = try await pool.run { connection in
            try connection.query("SELECT strata_push_as($1, $2, $3::uuid[], $4::uuid[], $5::int8[], $6::int8[], $7::text[], $8::bytea[])", parameters)
        }
        return rows.first?.first.flatMap { $0 }.flatMap { Int($0) } ?? 0
    }

    /// Every operation of `document` after `position`, at most `limit`, for the pulls of a
    /// ``Delivery`` to take their pages from.
    func rows(of document: String, after position: Int64, limit: Int) async throws -> SharedRows {
        let rows = try await pool.run { connection in
            try connection.query("""
                SELECT position, id, node, seq, hlc, kind, payload FROM strata_operations
                WHERE document = $1 AND position > $2 ORDER BY position LIMIT $3
                """, [document, String(position), String(limit)])
        }
        return SharedRows(rows: try rows.map(Self.operation), full: rows.count == limit)
    }

    /// One row of (position, id, node, seq, hlc, kind, payload).
    static func operation(_ fields: [String?]) throws -> (position: Int64, operation: SyncWire.Operation) {
        guard fields.count == 7, let position = fields[0].flatMap({ Int64($0) }), let id = fields[1].flatMap(UUID.init(uuidString:)),
              let node = fields[2].flatMap(UUID.init(uuidString:)), let seq = fields[3].flatMap({ Int64($0) }),
              let hlc = fields[4].flatMap({ Int64($0) }), let kind = fields[5], let payload = fields[6]
        else { throw PGConnectionError(.malformed, "an operation row does not read") }
        return (position, SyncWire.Operation(id: id, node: node, seq: seq, hlc: hlc, kind: kind, payload: Data(try PGText.bytes(payload))))
    }

    /// The operations `request` asks for, at most `limit` (none with 0: then the position
    /// of the newest, if any).
    func pull(_ request: SyncWire.PullRequest, clock: [(UUID, Int64)], limit: Int, document: String) async throws -> SyncWire.PullResponse {
        let nodes = PGText.array(clock.map { $0.0.uuidString })
        let seqs = PGText.array(clock.map { $0.1 })
        let filter = """
            FROM strata_operations o
            LEFT JOIN unnest($1::uuid[], $2::int8[]) AS c(node, seq) ON c.node = o.node
            WHERE o.document = $3 AND o.position > $4 AND o.node <> $5 AND o.seq > coalesce(c.seq, 0)
            """
        let base: [String?] = [nodes, seqs, document, String(request.after), request.exclude.uuidString]
        if limit == 0 {
            let rows = try await pool.run { connection in
                try connection.query("SELECT max(o.position) \(filter)", base)
            }
            let newest = rows.first?.first.flatMap { $0 }.flatMap { Int64($0) }
            return SyncWire.PullResponse(operations: [], cursor: newest ?? request.after, hasMore: newest != nil)
        }
        let rows = try await pool.run { connection in
            try connection.query("SELECT o.position, o.id, o.node, o.seq, o.hlc, o.kind, o.payload \(filter) ORDER BY o.position LIMIT $6",
                                 base + [String(limit)])
        }
        var operations: [SyncWire.Operation] = []
        var last = request.after
        for fields in rows {
            let (position, operation) = try Self.operation(fields)
            operations.append(operation)
            last = position
        }
        return SyncWire.PullResponse(operations: operations, cursor: last, hasMore: rows.count == limit)
    }
}

/// What one query of a ``Delivery`` read: operations by position, and whether the limit cut
/// it short (then a pull whose page may lie past it queries on its own).
struct SharedRows: Sendable {
    var rows: [(position: Int64, operation: SyncWire.Operation)]
    var full: Bool

    /// `request`'s page out of these rows and the positions it took, or nil when they may
    /// not hold all of it.
    func page(for request: SyncWire.PullRequest, clock: [UUID: Int64], limit: Int) -> (page: SyncWire.PullResponse, positions: [Int64])? {
        var taken: [SyncWire.Operation] = []
        var positions: [Int64] = []
        var cursor = request.after
        var more = false
        for (position, operation) in rows where position > request.after && operation.node != request.exclude
            && operation.seq > (clock[operation.node] ?? 0) {
            if taken.count == limit {
                more = true
                if limit == 0 { cursor = position }
                continue
            }
            taken.append(operation)
            positions.append(position)
            cursor = position
        }
        if full && !more { return nil }
        return (SyncWire.PullResponse(operations: taken, cursor: cursor, hasMore: more), positions)
    }
}

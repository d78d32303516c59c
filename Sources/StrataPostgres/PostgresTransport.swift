import CLibPQ
import Foundation
import Logging
import Strata
import StrataPQ

/// A ``SyncTransport`` to a PostgreSQL server, through libpq (``PGConnection``): one
/// connection, made on first use and again after a failure; every call one round trip,
/// bounded by `timeout` (a dead server is given up on, the query cancelled).
///
/// The server's schema (``SyncSchema``) is created by the first client that connects
/// and versioned like the local one. Operations of every document live in one table,
/// keyed by (document, id) and by (document, node, seq), so a retried push is ignored
/// row by row (`ON CONFLICT DO NOTHING`). Pushes to one document are serialized by an
/// advisory lock inside `strata_push`, so `position` grows in commit order and a pull
/// that pages by position never skips a row committed late.
///
/// ```swift
/// let transport = try PostgresTransport(url: "postgresql://strata@/strata?host=/tmp/pg", document: "canvas")
/// engine.startSync(transport: transport) { op in canvas.apply(op) }
/// ```
public actor PostgresTransport: SyncTransport {
    public let endpoint: PostgresEndpoint
    public let document: String
    private let url: String
    private let timeout: Duration
    private let logger: Logger
    private var connection: PGConnection?
    private var info: SyncServerInfo?
    private var listener: PGListener?

    /// `timeout`: the longest any one call (the connect, a push, a pull) may take; the
    /// sync's `request_timeout_ms` (``SyncConfig/requestTimeout``) by default.
    public init(url: String, document: String, timeout: Duration = SyncConfig().requestTimeout,
                logger: Logger = Logger(label: "strata.sync.postgres")) throws {
        self.endpoint = try PostgresEndpoint(url: url)
        self.url = url
        self.document = document
        self.timeout = timeout
        self.logger = logger
    }

    public func connect() async throws -> SyncServerInfo {
        if let connection, connection.isOpen, let info { return info }
        disconnectNow()
        do {
            let connection = try PGConnection(conninfo: url, timeout: timeout)
            self.connection = connection
            let (node, version, server) = try SyncSchema.prepare(connection)
            let info = SyncServerInfo(node: NodeID(node), schemaVersion: version, description: "PostgreSQL \(server), document \"\(document)\"")
            self.info = info
            return info
        } catch {
            disconnectNow()
            throw Self.classify(error)
        }
    }

    public func push(_ operations: [LoggedOperation]) async throws -> PushReceipt {
        guard !operations.isEmpty else { return PushReceipt(inserted: 0, duplicates: 0) }
        let connection = try await connected()
        do {
            let rows = try connection.query("SELECT strata_push($1, $2::uuid[], $3::uuid[], $4::int8[], $5::int8[], $6::text[], $7::bytea[])", [
                document,
                PGText.array(operations.map { $0.id.uuid.uuidString }),
                PGText.array(operations.map { $0.node.uuid.uuidString }),
                PGText.array(operations.map(\.seq)),
                PGText.array(operations.map(\.timestamp.rawValue)),
                PGText.textArray(operations.map(\.kind)),
                PGText.byteaArray(operations.map(\.payload)),
            ])
            let inserted = rows.first?.first.flatMap { $0 }.flatMap { Int($0) } ?? 0
            return PushReceipt(inserted: inserted, duplicates: operations.count - inserted)
        } catch {
            throw failed(error)
        }
    }

    public func pull(excluding node: NodeID, clock: [NodeID: Int64], after cursor: Int64, limit: Int) async throws -> PulledPage {
        let connection = try await connected()
        let clockNodes = Array(clock.keys)
        do {
            let rows = try connection.query("""
                SELECT o.position, o.id, o.node, o.seq, o.hlc, o.kind, o.payload FROM strata_operations o
                LEFT JOIN unnest($1::uuid[], $2::int8[]) AS c(node, seq) ON c.node = o.node
                WHERE o.document = $3 AND o.position > $4 AND o.node <> $5 AND o.seq > coalesce(c.seq, 0)
                ORDER BY o.position LIMIT $6
                """, [PGText.array(clockNodes.map(\.uuid.uuidString)), PGText.array(clockNodes.map { clock[$0] ?? 0 }),
                      document, String(cursor), node.uuid.uuidString, String(limit)])
            var operations: [LoggedOperation] = []
            var last = cursor
            for fields in rows {
                guard fields.count == 7, let position = fields[0].flatMap({ Int64($0) }), let id = fields[1].flatMap(UUID.init(uuidString:)),
                      let from = fields[2].flatMap(UUID.init(uuidString:)), let seq = fields[3].flatMap({ Int64($0) }),
                      seq > 0, seq <= 1 << 62,
                      let hlc = fields[4].flatMap({ Int64($0) }), let kind = fields[5], let payload = fields[6]
                else { throw SyncError(.failed, "the server sent an operation this build cannot read") }
                operations.append(LoggedOperation(id: EntityID(id), node: NodeID(from), seq: seq, timestamp: HybridTimestamp(rawValue: hlc),
                                                  kind: kind, payload: try PGText.bytes(payload)))
                last = position
            }
            return PulledPage(operations: operations, cursor: last, hasMore: rows.count == limit)
        } catch {
            throw failed(error)
        }
    }

    public func serverClock() async throws -> Int64 {
        let connection = try await connected()
        do {
            let rows = try connection.query("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8")
            return rows.first?.first.flatMap { $0 }.flatMap { Int64($0) } ?? 0
        } catch {
            throw failed(error)
        }
    }

    public func disconnect() async { disconnectNow() }

    /// Listens on the document's channel (`LISTEN`, on a connection and a thread of its
    /// own: ``PGListener``); `strata_push` notifies it from schema 2 on.
    public func startListening(_ changed: @escaping @Sendable (ListenEvent) -> Void) async -> Bool {
        if listener == nil {
            let listener = PGListener(url: url, document: document, timeout: timeout, changed: changed)
            self.listener = listener
            listener.start()
        }
        return true
    }

    public func stopListening() async {
        listener?.stop()
        listener = nil
    }

    private func disconnectNow() {
        connection?.close()
        connection = nil
        info = nil
    }

    private func connected() async throws -> PGConnection {
        _ = try await connect()
        guard let connection else { throw SyncError(.unreachable, "not connected") }
        return connection
    }

    /// Classifies `error`, dropping the connection unless the server merely refused the data.
    private func failed(_ error: any Error) -> SyncError {
        let classified = Self.classify(error)
        if classified.kind != .rejected { disconnectNow() }
        return classified
    }

    /// Data the server refused (integrity constraints, data exceptions, a trigger's
    /// RAISE): `.rejected`; no connection: `.unreachable`; the rest: `.failed`.
    static func classify(_ error: any Error) -> SyncError {
        if let error = error as? SyncError { return error }
        if let broken = error as? PGConnectionError {
            switch broken.kind {
            case .unreachable: return SyncError(.unreachable, broken.message)
            case .misconfigured: return SyncError(.misconfigured, broken.message)
            case .malformed: return SyncError(.failed, broken.message)
            }
        }
        guard let server = error as? PGError else { return SyncError(.unreachable, "\(error)") }
        let state = server.sqlState
        // Classes 22 (data exception), 23 (integrity constraint), P0 (PL/pgSQL raise).
        if state.hasPrefix("22") || state.hasPrefix("23") || state.hasPrefix("P0") {
            return SyncError(.rejected, server.description)
        }
        // 08 connection exception, 57P admin shutdown / cannot connect now, 53 resources.
        if state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") {
            return SyncError(.unreachable, server.description)
        }
        return SyncError(.failed, server.description)
    }
}

/// Where a `postgresql://` URL points: `postgresql://USER[:PASSWORD]@[HOST][:PORT]/DATABASE`,
/// with `?host=/a/folder` for a Unix socket (`/a/folder/.s.PGSQL.PORT`) and libpq's other
/// parameters (`sslmode`, `sslrootcert`, …). Checked here, before a document is opened;
/// libpq reads the URL itself.
public struct PostgresEndpoint: Sendable, Equatable {
    public var user: String
    public var password: String?
    public var host: String?
    public var socketFolder: String?
    public var port: Int
    public var database: String

    public init(url: String) throws {
        guard let components = URLComponents(string: url), ["postgresql", "postgres"].contains(components.scheme ?? "") else {
            throw SyncError(.failed, "not a postgresql:// URL: \(url)")
        }
        // libpq's own reading of it: an option it does not know is refused here, by name,
        // not found at the first connect and taken for a server out of reach.
        var parseError: UnsafeMutablePointer<CChar>?
        if let options = PQconninfoParse(url, &parseError) {
            PQconninfoFree(options)
        } else {
            let why = parseError.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "it does not read"
            if let parseError { PQfreemem(parseError) }
            throw SyncError(.misconfigured, "libpq does not take this URL (\(why)): \(url)")
        }
        user = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        password = components.password
        port = components.port ?? 5432
        guard (1 ... 65535).contains(port) else {
            throw SyncError(.failed, "port \(port) is not between 1 and 65535: \(url)")
        }
        database = String(components.path.drop(while: { $0 == "/" }))
        if database.isEmpty { database = user }
        if let mode = components.queryItems?.first(where: { $0.name == "sslmode" })?.value,
           !["disable", "allow", "prefer", "require", "verify-ca", "verify-full"].contains(mode) {
            throw SyncError(.failed, "sslmode \(mode) is not one of disable, allow, prefer, require, verify-ca, verify-full: \(url)")
        }
        let hostItem = components.queryItems?.first { $0.name == "host" }?.value
        if let hostItem, hostItem.hasPrefix("/") {
            socketFolder = hostItem
        } else if let h = components.host, !h.isEmpty {
            host = h
        } else {
            socketFolder = hostItem ?? "/var/run/postgresql"
        }
    }
}

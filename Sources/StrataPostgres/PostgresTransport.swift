import Foundation
import Logging
import NIOCore
import PostgresNIO
import Strata

/// A ``SyncTransport`` to a PostgreSQL server, through postgres-nio: one connection,
/// made on first use and again after a failure; every call one round trip.
///
/// The server's schema (``PostgresSchema``) is created by the first client that connects
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
    private let logger: Logger
    private var connection: PostgresConnection?
    private var info: SyncServerInfo?
    private var nextConnectionID = 1

    public init(url: String, document: String, logger: Logger = Logger(label: "strata.sync.postgres")) throws {
        self.endpoint = try PostgresEndpoint(url: url)
        self.document = document
        self.logger = logger
    }

    public func connect() async throws -> SyncServerInfo {
        if let connection, !connection.isClosed, let info { return info }
        await disconnect()
        do {
            let connection = try await PostgresConnection.connect(configuration: endpoint.configuration, id: nextConnectionID, logger: logger)
            nextConnectionID += 1
            self.connection = connection
            let (node, version, server) = try await PostgresSchema.prepare(connection, logger: logger)
            let info = SyncServerInfo(node: NodeID(node), schemaVersion: version, description: "PostgreSQL \(server), document \"\(document)\"")
            self.info = info
            return info
        } catch {
            await disconnect()
            throw Self.classify(error)
        }
    }

    public func push(_ operations: [LoggedOperation]) async throws -> PushReceipt {
        guard !operations.isEmpty else { return PushReceipt(inserted: 0, duplicates: 0) }
        let connection = try await connected()
        let ids = operations.map(\.id.uuid), nodes = operations.map(\.node.uuid)
        let seqs = operations.map(\.seq), stamps = operations.map(\.timestamp.rawValue)
        let kinds = operations.map(\.kind), payloads = operations.map { ByteBuffer(bytes: $0.payload) }
        do {
            let rows = try await connection.query(
                "SELECT strata_push(\(document), \(ids), \(nodes), \(seqs), \(stamps), \(kinds), \(payloads))", logger: logger).collect()
            let inserted = try rows.first?.decode(Int64.self) ?? 0
            return PushReceipt(inserted: Int(inserted), duplicates: operations.count - Int(inserted))
        } catch {
            throw await failed(error)
        }
    }

    public func pull(excluding node: NodeID, clock: [NodeID: Int64], after cursor: Int64, limit: Int) async throws -> PulledPage {
        let connection = try await connected()
        let clockNodes = clock.keys.map(\.uuid), clockSeqs = clock.keys.map { clock[$0]! }
        do {
            let rows = try await connection.query("""
                SELECT o.position, o.id, o.node, o.seq, o.hlc, o.kind, o.payload FROM strata_operations o
                LEFT JOIN unnest(\(clockNodes)::uuid[], \(clockSeqs)::int8[]) AS c(node, seq) ON c.node = o.node
                WHERE o.document = \(document) AND o.position > \(cursor) AND o.node <> \(node.uuid) AND o.seq > coalesce(c.seq, 0)
                ORDER BY o.position LIMIT \(Int64(limit))
                """, logger: logger).collect()
            var operations: [LoggedOperation] = []
            var last = cursor
            for row in rows {
                let (position, id, node, seq, hlc, kind, payload) = try row.decode((Int64, UUID, UUID, Int64, Int64, String, ByteBuffer).self)
                operations.append(LoggedOperation(id: EntityID(id), node: NodeID(node), seq: seq, timestamp: HybridTimestamp(rawValue: hlc),
                                                  kind: kind, payload: Array(buffer: payload)))
                last = position
            }
            return PulledPage(operations: operations, cursor: last, hasMore: rows.count == limit)
        } catch {
            throw await failed(error)
        }
    }

    public func serverClock() async throws -> Int64 {
        let connection = try await connected()
        do {
            let rows = try await connection.query("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8", logger: logger).collect()
            return try rows.first?.decode(Int64.self) ?? 0
        } catch {
            throw await failed(error)
        }
    }

    public func disconnect() async {
        let connection = self.connection
        self.connection = nil
        info = nil
        try? await connection?.close()
    }

    private func connected() async throws -> PostgresConnection {
        _ = try await connect()
        guard let connection else { throw SyncError(.unreachable, "not connected") }
        return connection
    }

    /// Classifies `error`, dropping the connection unless the server merely refused the data.
    private func failed(_ error: any Error) async -> SyncError {
        let classified = Self.classify(error)
        if classified.kind != .rejected { await disconnect() }
        return classified
    }

    /// Data the server refused (integrity constraints, data exceptions, a trigger's
    /// RAISE): `.rejected`; no connection: `.unreachable`; the rest: `.failed`.
    static func classify(_ error: any Error) -> SyncError {
        if let error = error as? SyncError { return error }
        guard let psql = error as? PSQLError else { return SyncError(.unreachable, "\(error)") }
        switch psql.code {
        case .server:
            let state = psql.serverInfo?[.sqlState] ?? ""
            let message = psql.serverInfo?[.message] ?? "server error"
            // Classes 22 (data exception), 23 (integrity constraint), P0 (PL/pgSQL raise).
            if state.hasPrefix("22") || state.hasPrefix("23") || state.hasPrefix("P0") {
                return SyncError(.rejected, "\(message) (SQLSTATE \(state))")
            }
            // 08 connection exception, 57P admin shutdown / cannot connect now, 53 resources.
            if state.hasPrefix("08") || state.hasPrefix("57P") || state.hasPrefix("53") {
                return SyncError(.unreachable, "\(message) (SQLSTATE \(state))")
            }
            return SyncError(.failed, "\(message) (SQLSTATE \(state))")
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .queryCancelled:
            return SyncError(.unreachable, psql.underlying.map { "\(psql.code): \($0)" } ?? "\(psql.code)")
        default:
            return SyncError(.failed, "\(psql.code)")
        }
    }
}

/// Where a `postgresql://` URL points: `postgresql://USER[:PASSWORD]@[HOST][:PORT]/DATABASE`,
/// with `?host=/a/folder` for a Unix socket (`/a/folder/.s.PGSQL.PORT`, as libpq does).
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
        user = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        password = components.password
        port = components.port ?? 5432
        guard (1 ... 65535).contains(port) else {
            throw SyncError(.failed, "port \(port) is not between 1 and 65535: \(url)")
        }
        database = String(components.path.drop(while: { $0 == "/" }))
        if database.isEmpty { database = user }
        let hostItem = components.queryItems?.first { $0.name == "host" }?.value
        if let hostItem, hostItem.hasPrefix("/") {
            socketFolder = hostItem
        } else if let h = components.host, !h.isEmpty {
            host = h
        } else {
            socketFolder = hostItem ?? "/var/run/postgresql"
        }
    }

    var configuration: PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socketFolder {
            configuration = .init(unixSocketPath: "\(socketFolder)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            configuration = .init(host: host ?? "localhost", port: port, username: user, password: password, database: database, tls: .disable)
        }
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}

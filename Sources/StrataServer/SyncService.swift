import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import StrataPQ

/// One instance of the sync service: HTTP in front of PostgreSQL. It keeps no device's
/// state — a device may talk to any instance, and move between them — only what makes
/// it cheap to serve many: a pool of a few connections, one change feed, the pulls waiting
/// here, and per-subject rate limits.
public final class SyncService: Sendable {
    public let config: ServerConfig
    let verifier: TokenVerifier
    let pool: DatabasePool
    let store: SyncStore
    let waiters = DocumentWaiters()
    let feed: ChangeFeed
    let limiter: RateLimiter
    let memberships: MembershipCache
    let signedTokens = SignedTokens()
    let metrics: ServerMetrics
    let logger: Logger
    /// This instance's name for PostgreSQL (`application_name` of its connections).
    public let instanceName: String
    /// The server's node id, schema version and version string (read at start).
    let identity: (node: UUID, schemaVersion: Int, server: String)
    /// The certificate and key connections are served with (nil: plain HTTP, on loopback).
    let tls: TLSContext?

    /// Checks the settings, reads the keys, prepares the schema and starts the change feed.
    public init(config: ServerConfig, logger: Logger, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) async throws {
        try config.validate()
        self.config = config
        self.logger = logger
        verifier = TokenVerifier(keys: try config.loadKeys(), audience: config.audience, leeway: config.leeway)
        tls = config.tlsCertificate.isEmpty ? nil : try TLSContext(certificateFile: config.tlsCertificate, keyFile: config.tlsKey)
        // Its connections say whose they are (`pg_stat_activity.application_name`).
        instanceName = "strata-server-\(UUID().uuidString.prefix(8).lowercased())"
        let url = config.databaseURL + (config.databaseURL.contains("?") ? "&" : "?") + "application_name=\(instanceName)"
        pool = DatabasePool(url: url, size: config.poolSize, timeout: config.databaseTimeout)
        store = SyncStore(pool: pool)
        limiter = RateLimiter(rate: config.requestsPerSecond, burst: config.burst)
        memberships = MembershipCache(ttl: config.membershipCache)
        metrics = ServerMetrics(registry: registry)
        identity = try await store.prepare(waiting: config.startWait, logger: logger)
        feed = ChangeFeed(url: url, timeout: config.databaseTimeout, waiters: waiters, logger: logger)
        feed.start()
    }

    /// The HTTP application: serve it with `runService()` (SIGTERM and SIGINT end it
    /// cleanly). `onServerRunning` gets the bound port. HTTPS when the settings name a
    /// certificate, plain HTTP (on loopback) when not.
    public func application(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let http = HTTP1Channel.Configuration(idleTimeout: .seconds(config.idleTimeout.components.seconds))
        let tls = tls
        let server = HTTPServerBuilder { responder in ServedChannel(base: HTTP1Channel(responder: responder, configuration: http), tls: tls) }
        return Application(
            router: router(),
            server: server,
            configuration: .init(address: .hostname(config.host, port: config.port), serverName: "strata-server"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// Stops the feed and closes the pool (after the HTTP server has stopped).
    public func shutdown() {
        feed.stop()
        waiters.wakeAll()
        pool.close()
    }

    /// The version this service says it is.
    public static let version = "strata-server 1"
}

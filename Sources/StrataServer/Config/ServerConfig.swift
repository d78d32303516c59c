import Foundation

/// `strata-server serve`'s settings: the TOML file (`ServerConfig+TOML.swift`), then the
/// command line's overrides. Checked whole at start: a service that starts is one that can
/// answer.
public struct ServerConfig: Sendable, Equatable {
    /// `[server] listen`: `HOST:PORT` (port 0: any free port, said at start).
    public var host = "127.0.0.1"
    public var port = 8080
    /// `[server] tls_certificate` and `tls_key`: PEM files (the chain, then the key).
    /// With them the service speaks HTTPS only; without them it listens on a loopback
    /// address only (behind a proxy that terminates TLS).
    public var tlsCertificate = ""
    public var tlsKey = ""
    /// `[server] request_timeout_secs`: a request's body must have arrived by then (a client
    /// that sends slowly is cut off), and a pull waits no longer than this less 5 s.
    public var requestTimeout: Duration = .seconds(60)
    /// `[server] idle_timeout_secs`: a connection with no request for this long is closed.
    public var idleTimeout: Duration = .seconds(75)
    /// `[server] max_pull_wait_secs`: the longest a live pull waits for news.
    public var maxPullWait: Duration = .seconds(30)

    /// `[database] url`: the PostgreSQL server (a `postgresql://` URL, libpq's form).
    public var databaseURL = ""
    /// `[database] pool_size`: connections for requests (one more listens for changes).
    public var poolSize = 10
    /// `[database] timeout_ms`: the longest one query may take.
    public var databaseTimeout: Duration = .seconds(10)
    /// `[database] start_wait_secs`: how long a start waits for a database that does not
    /// answer (one restarting with the service, or after it) before it gives up.
    public var startWait: Duration = .seconds(60)

    /// `[auth] audience`: the `aud` every token must carry.
    public var audience = "strata"
    /// `[auth] hmac_secret_file`: a file holding an HS256 secret (tokens without a `kid`).
    public var hmacSecretFile = ""
    /// `[[auth.keys]]`: public keys (`id`, `algorithm` EdDSA/ES256/ES384, `public_key_file`),
    /// or HMAC secrets (`algorithm` HS256/HS384/HS512, `secret_file`), by key id.
    public var keys: [KeyEntry] = []
    /// `[auth] membership_cache_ms`: how long an instance keeps a role it read (a grant or
    /// a revocation takes effect within it); 0: PostgreSQL is asked at every request.
    public var membershipCache: Duration = .seconds(5)
    /// `[auth] leeway_secs`: clock slack allowed on `exp` and `nbf`.
    public var leeway: Duration = .seconds(10)

    /// `[limits] max_body_bytes`: the largest request body (413 beyond).
    public var maxBodyBytes = 16 * 1024 * 1024
    /// `[limits] max_operations_per_push`: operations in one push (413 beyond).
    public var maxOperationsPerPush = 10_000
    /// `[limits] max_payload_bytes`: one operation's payload (413 beyond).
    public var maxPayloadBytes = 1024 * 1024
    /// `[limits] max_pull_limit`: operations in one pulled page (a larger limit is cut to it).
    public var maxPullLimit = 10_000
    /// `[limits] requests_per_second` and `burst`: per subject, per instance (429 beyond).
    public var requestsPerSecond = 100.0
    public var burst = 200.0
    /// `[limits] max_document_name_bytes`.
    public var maxDocumentNameBytes = 200

    public struct KeyEntry: Sendable, Equatable {
        public var id: String
        public var algorithm: String
        public var file: String
    }

    public init() {}

    /// Whether `host` is a loopback address (plain HTTP is allowed there only).
    public var listensOnLoopback: Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }
}

/// A setting that cannot be right, named by its key.
public struct ServerConfigError: Error, CustomStringConvertible {
    public var key: String
    public var message: String

    public init(_ key: String, _ message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { key.isEmpty ? message : "\(key): \(message)" }
}

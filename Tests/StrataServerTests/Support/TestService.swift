import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import StrataServer
import StrataWire

/// A sync service instance in this process, on a free loopback port, with a secret of its
/// own (or a given one: two instances of one fleet), on the shared private PostgreSQL.
final class TestService: @unchecked Sendable {
    let service: SyncService
    let task: Task<Void, any Error>
    let port: Int
    let secret: [UInt8]
    let postgres: TestPostgres

    var base: String { "\(service.config.tlsCertificate.isEmpty ? "http" : "https")://127.0.0.1:\(port)" }

    init(secret: [UInt8]? = nil, _ adjust: (inout ServerConfig) -> Void = { _ in }) async throws {
        postgres = try TestPostgres.shared.get()
        self.secret = secret ?? TokenKey.randomSecret()
        let secretFile = NSTemporaryDirectory() + "strata-server-secret-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: secretFile, contents: Data(self.secret)) else { throw TestFailure("cannot write \(secretFile)") }
        defer { unlink(secretFile) }
        var config = Self.config(database: postgres.url, secretFile: secretFile)
        adjust(&config)
        service = try await SyncService(config: config, logger: Self.logger)
        let bound = AsyncStream<Int>.makeStream()
        let app = service.application { port in bound.continuation.yield(port) }
        task = Task { try await app.runService() }
        var found = 0
        for await port in bound.stream { found = port; break }
        port = found
    }

    /// The settings of an instance on `database` on a free loopback port, its tokens checked
    /// with the secret in `secretFile`.
    static func config(database: String, secretFile: String) -> ServerConfig {
        var config = ServerConfig()
        config.databaseURL = database
        config.port = 0
        config.hmacSecretFile = secretFile
        config.poolSize = 4
        return config
    }

    static var logger: Logger {
        var logger = Logger(label: "strata.server.test")
        logger.logLevel = .error
        return logger
    }

    func stop() async {
        task.cancel()
        _ = await task.result
        service.shutdown()
    }

    /// A token for `subject` signed with this instance's secret.
    func token(_ subject: String, ttl: Duration = .seconds(600), audience: String = "strata", now: Date = Date(),
               notBefore: Date? = nil) throws -> String {
        try TokenSigner.token(subject: subject, audience: audience, key: try TokenKey(id: nil, secret: secret), ttl: ttl,
                              now: now, notBefore: notBefore)
    }

    /// Grants `role` to `subject` on `document`.
    func grant(_ role: Role, _ subject: String, _ document: String) throws {
        let members = try Members(url: postgres.url)
        defer { members.close() }
        try members.grant(role, to: subject, on: document)
    }

    /// Operations stored for `document`.
    func stored(_ document: String) throws -> Int {
        Int(try postgres.sql("SELECT count(*) FROM strata_operations WHERE document = '\(document)'")) ?? -1
    }

    /// Many requests at once (live pulls): not URLSession.shared's 6 per host.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 200
        configuration.timeoutIntervalForRequest = 3700
        return URLSession(configuration: configuration)
    }()

    struct Answer {
        var status: Int
        var body: Data
        var headers: [String: String]
        var text: String { String(decoding: body, as: UTF8.self) }
        var errorCode: String? { (try? JSONDecoder().decode(SyncWire.ErrorBody.self, from: body))?.error.code }
    }

    /// One request to `route` of `document` (or to `path` as given when `document` is nil).
    func request(_ method: String, _ route: String, document: String? = nil, token: String?, body: Data? = nil,
                 timeout: TimeInterval = 60) async throws -> Answer {
        let path = document.map { SyncWire.path(document: $0, route) } ?? route
        guard let url = URL(string: base + path) else { throw TestFailure("no URL for \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await Self.session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TestFailure("not HTTP") }
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields { headers[String(describing: key).lowercased()] = String(describing: value) }
        return Answer(status: http.statusCode, body: data, headers: headers)
    }

    func push(_ document: String, token: String, _ operations: [SyncWire.Operation]) async throws -> Answer {
        try await request("POST", "push", document: document, token: token, body: try JSONEncoder().encode(SyncWire.PushRequest(operations: operations)))
    }

    func pull(_ document: String, token: String, after: Int64 = 0, limit: Int = 100, waitMilliseconds: Int = 0,
              exclude: UUID = UUID()) async throws -> Answer {
        let request = SyncWire.PullRequest(exclude: exclude, clock: [:], after: after, limit: limit, waitMilliseconds: waitMilliseconds)
        return try await self.request("POST", "pull", document: document, token: token, body: try JSONEncoder().encode(request),
                                      timeout: Double(waitMilliseconds) / 1000 + 60)
    }
}

/// An operation of `node` (a new one by default) with sequence `seq`.
func operation(node: UUID = UUID(), seq: Int64 = 1, payload: Int = 8) -> SyncWire.Operation {
    SyncWire.Operation(id: UUID(), node: node, seq: seq, hlc: Int64(seq) << 16, kind: "test.op", payload: Data(repeating: 7, count: payload))
}

/// A document name no other test uses.
func freshDocument(_ name: String = #function) -> String {
    "\(name.prefix(40))-\(UUID().uuidString.prefix(8))"
}

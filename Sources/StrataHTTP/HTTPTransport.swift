import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Strata
import StrataWire

/// A ``SyncTransport`` to a Strata sync service (`strata-server`) over HTTP, on Foundation's
/// URLSession: no database credentials on the device, only a bearer token that opens the
/// documents its subject is a member of.
///
/// Every call is one request, bounded by `timeout`. The token comes from `token`, asked
/// at the first request and again after a 401 (a refreshed token is used at once; a
/// second 401 in a row is the sync's error). How refusals reach the sync client:
/// - 403 `read_only` (a reader's push): `.readOnly` (its operations wait, pulls go on);
/// - 401 twice, 403 and 404: `.misconfigured` (the token or the membership is wrong;
///   retrying changes nothing until someone fixes it);
/// - 413 and 422: `.rejected` (the operations sent are at fault: isolated, counted);
/// - 429, 5xx, no answer: `.unreachable` (backs off; a 429's `Retry-After` is in the message);
/// - anything else: `.failed`.
///
/// Listening is a long-poll (``startListening(_:)``): the service answers as soon as
/// another device pushes to the document, so no device polls and no device holds a
/// database connection.
///
/// ```swift
/// let transport = try HTTPTransport(url: "https://sync.example.com", document: "canvas") {
///     try await session.freshToken()
/// }
/// engine.startSync(transport: transport) { op in canvas.apply(op) }
/// ```
public actor HTTPTransport: SyncTransport {
    public let base: URL
    public let document: String
    let timeout: Duration
    /// How long one listening request waits for news (the service may answer sooner).
    let listenWait: Duration
    let logger: Logger
    private let token: @Sendable () async throws -> String
    private var currentToken: String?
    private var info: SyncServerInfo?
    let session: URLSession
    /// The highest position seen in a pull's answer: where listening waits from.
    var newestSeen: Int64 = 0
    /// This device's node, from its pulls (they leave it out): listening leaves it out too.
    var deviceNode: UUID?
    var listener: Task<Void, Never>?

    /// `url`: `https://HOST[:PORT]`, or `http://` to a loopback address only (a token must
    /// not cross a network in clear). `token`: the bearer token, asked again after a 401.
    public init(url: String, document: String, timeout: Duration = SyncConfig().requestTimeout,
                listenWait: Duration = .seconds(25), logger: Logger = Logger(label: "strata.sync.http"),
                token: @escaping @Sendable () async throws -> String) throws {
        self.base = try Self.checkedBase(url)
        self.document = document
        self.timeout = timeout
        self.listenWait = listenWait
        self.logger = logger
        self.token = token
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout.seconds + listenWait.seconds
        configuration.httpMaximumConnectionsPerHost = 2   // one call at a time, and the listener
        session = URLSession(configuration: configuration)
    }

    /// The service's base URL, or why it cannot be one. Refuses what cannot be right before anything is opened: another scheme, no host, a
    /// path or query (the service's routes are its own), plain HTTP beyond loopback.
    public static func checkedBase(_ url: String) throws -> URL {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              ["http", "https"].contains(scheme), let host = components.host, !host.isEmpty
        else { throw SyncError(.misconfigured, "not an http:// or https:// URL of a sync service: \(url)") }
        guard components.path.isEmpty || components.path == "/", components.query == nil, components.user == nil else {
            throw SyncError(.misconfigured, "the service's URL is its scheme, host and port only (no path, query or user): \(url)")
        }
        if scheme == "http" && !isLoopback(host) {
            throw SyncError(.misconfigured, "plain http:// only to a loopback address (the token would cross the network in clear): \(url)")
        }
        var base = components
        base.path = ""
        guard let made = base.url else { throw SyncError(.misconfigured, "not a URL: \(url)") }
        return made
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
    }

    public func connect() async throws -> SyncServerInfo {
        if let info { return info }
        let answer: SyncWire.Info = try await call("GET", "info", body: Optional<SyncWire.PushRequest>.none)
        let made = SyncServerInfo(node: NodeID(answer.node), schemaVersion: answer.schemaVersion,
                                  description: "\(answer.server) at \(base.absoluteString), document \"\(answer.document)\" as \(answer.role)")
        info = made
        return made
    }

    public func push(_ operations: [LoggedOperation]) async throws -> PushReceipt {
        guard !operations.isEmpty else { return PushReceipt(inserted: 0, duplicates: 0) }
        _ = try await connect()
        let answer: SyncWire.PushResponse = try await call("POST", "push", body: SyncWire.PushRequest(operations: operations.map(SyncWire.Operation.init)))
        return PushReceipt(inserted: answer.inserted, duplicates: answer.duplicates)
    }

    public func pull(excluding node: NodeID, clock: [NodeID: Int64], after cursor: Int64, limit: Int) async throws -> PulledPage {
        _ = try await connect()
        deviceNode = node.uuid
        let request = SyncWire.PullRequest(exclude: node.uuid, clock: Dictionary(uniqueKeysWithValues: clock.map { ($0.key.uuid, $0.value) }),
                                           after: cursor, limit: limit)
        let answer: SyncWire.PullResponse = try await call("POST", "pull", body: request)
        newestSeen = max(newestSeen, answer.cursor)
        return PulledPage(operations: answer.operations.map(\.logged), cursor: answer.cursor, hasMore: answer.hasMore)
    }

    public func serverClock() async throws -> Int64 {
        let answer: SyncWire.Info = try await call("GET", "info", body: Optional<SyncWire.PushRequest>.none)
        return answer.timeMilliseconds
    }

    public func disconnect() async {
        info = nil
    }

    /// One request of `route`, with a fresh token after a 401 (once).
    func call<Body: Encodable, Answer: Decodable>(_ method: String, _ route: String, body: Body?,
                                                  extraWait: Duration = .zero) async throws -> Answer {
        let encoded: Data?
        do {
            encoded = try body.map { try JSONEncoder().encode($0) }
        } catch {
            throw SyncError(.rejected, "the request could not be encoded: \(error)")
        }
        var refreshed = false
        while true {
            let bearer = try await bearerToken(refresh: refreshed)
            let (data, response) = try await send(method, route, body: encoded, token: bearer, extraWait: extraWait)
            if response.statusCode == 401 && !refreshed {
                refreshed = true
                continue
            }
            guard (200 ..< 300).contains(response.statusCode) else { throw Self.refusal(response, data) }
            do {
                return try JSONDecoder().decode(Answer.self, from: data)
            } catch {
                throw SyncError(.failed, "the service's answer to \(route) does not read: \(error)")
            }
        }
    }

    private func bearerToken(refresh: Bool) async throws -> String {
        if !refresh, let currentToken { return currentToken }
        do {
            let fresh = try await token().trimmingCharacters(in: .whitespacesAndNewlines)
            guard !fresh.isEmpty else { throw SyncError(.misconfigured, "the token is empty") }
            currentToken = fresh
            return fresh
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.misconfigured, "no token: \(error)")
        }
    }

    private func send(_ method: String, _ route: String, body: Data?, token: String,
                      extraWait: Duration) async throws -> (Data, HTTPURLResponse) {
        guard let url = URL(string: SyncWire.path(document: document, route), relativeTo: base) else {
            throw SyncError(.misconfigured, "no URL for document \"\(document)\"")
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = (timeout + extraWait).seconds
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        do {
            let (data, response) = try await session.data(for: request)
            guard let http = response as? HTTPURLResponse else { throw SyncError(.failed, "not an HTTP answer") }
            return (data, http)
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.unreachable, "\(base.absoluteString): \(error.localizedDescription)")
        }
    }

    /// The sync's error for a refusal, with the service's own words when its body reads.
    static func refusal(_ response: HTTPURLResponse, _ data: Data) -> SyncError {
        let status = response.statusCode
        let body = try? JSONDecoder().decode(SyncWire.ErrorBody.self, from: data)
        let said = body.map { $0.error.message } ?? String(decoding: data.prefix(200), as: UTF8.self)
        let message = "HTTP \(status): \(said)"
        switch status {
        case 403 where body?.error.code == "read_only": return SyncError(.readOnly, message)
        case 401, 403, 404: return SyncError(.misconfigured, message)
        case 413, 422: return SyncError(.rejected, message)
        case 429:
            let after = response.value(forHTTPHeaderField: "Retry-After").map { " (retry after \($0) s)" } ?? ""
            return SyncError(.unreachable, message + after)
        case 500 ..< 600: return SyncError(.unreachable, message)
        default: return SyncError(.failed, message)
        }
    }
}

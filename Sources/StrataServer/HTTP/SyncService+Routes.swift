import Foundation
import Hummingbird
import StrataPQ
import StrataWire

/// The routes: `/healthz`, `/metrics`, and under `/v1/documents/{document}/` `info`, `push`
/// and `pull` (JSON bodies: ``SyncWire``), and `members` (`SyncService+Members.swift`). Every document route authenticates the bearer
/// token, counts against the subject's rate, and checks the subject's role on the document
/// before it touches anything.
extension SyncService {
    func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.get("healthz") { _, _ in try await self.health() }
        router.get("metrics") { _, _ in self.metricsPage() }
        router.get("v1/documents/:document/info") { request, context in
            try await self.answer("info", request, context, least: .reader) { subject, document, role in
                try self.json(SyncWire.Info(node: self.identity.node, schemaVersion: self.identity.schemaVersion,
                                            server: "\(Self.version), \(self.identity.server)", document: document,
                                            role: role.rawValue, timeMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)))
            }
        }
        router.post("v1/documents/:document/push") { request, context in
            try await self.answer("push", request, context, least: .writer) { subject, document, _ in
                try self.json(try await self.push(request, document: document, subject: subject))
            }
        }
        router.post("v1/documents/:document/pull") { request, context in
            try await self.answer("pull", request, context, least: .reader) { _, document, _ in
                self.json(bytes: try await self.pull(request, document: document))
            }
        }
        addMemberRoutes(to: router)
        return router
    }

    /// Authenticates, limits and authorizes, then runs `body`; counts the answer.
    func answer(_ route: String, _ request: Request, _ context: BasicRequestContext, least: Role,
                        _ body: (String, String, Role) async throws -> Response) async throws -> Response {
        do {
            let subject = try authenticate(request)
            if let wait = limiter.take(subject) { throw Refusal.tooMany(retryAfter: wait) }
            let document = try documentName(context)
            let role: Role?
            if let known = memberships.role(of: subject, on: document) {
                role = known
            } else {
                do {
                    role = try await store.role(of: subject, on: document)
                } catch {
                    throw databaseRefusal(error)
                }
                memberships.note(role, of: subject, on: document)
            }
            guard let role else { throw Refusal.forbidden("\(subject) is not a member of document \"\(document)\"") }
            guard role >= least else {
                // A reader's push is `read_only`: its device keeps its operations and pulls on.
                throw Refusal(status: .forbidden, code: least == .writer ? "read_only" : "forbidden",
                              message: "\(subject) is a \(role.rawValue) of \"\(document)\": \(route) needs a \(least.rawValue)")
            }
            let response = try await body(subject, document, role)
            metrics.answered(route, status: Int(response.status.code))
            return response
        } catch let refusal as Refusal {
            metrics.answered(route, status: Int(refusal.status.code))
            throw refusal
        }
    }

    /// The subject of the request's bearer token (401 with the reason otherwise).
    func authenticate(_ request: Request) throws -> String {
        guard let header = request.headers[.authorization] else {
            metrics.refusedToken("missing")
            throw Refusal.unauthorized(TokenRefusal.missing.description)
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            metrics.refusedToken("malformed")
            throw Refusal.unauthorized("the Authorization header is not \"Bearer TOKEN\"")
        }
        switch signedTokens.subject(of: String(parts[1].withoutBlanks), by: verifier) {
        case .success(let subject): return subject
        case .failure(let refusal):
            metrics.refusedToken(refusal.reason)
            throw Refusal.unauthorized(refusal.description)
        }
    }

    /// The document named by the path, percent-decoded and checked.
    func documentName(_ context: BasicRequestContext) throws -> String {
        guard let raw = context.parameters.get("document"), let name = raw.removingPercentEncoding, !name.isEmpty else {
            throw Refusal.notFound("no document in the path")
        }
        guard name.utf8.count <= config.maxDocumentNameBytes, !name.utf8.contains(0) else {
            throw Refusal.notFound("a document name is at most \(config.maxDocumentNameBytes) bytes, without NUL")
        }
        return name
    }

    func json(_ value: some Encodable) throws -> Response {
        json(bytes: ByteBuffer(bytes: try JSONEncoder().encode(value)))
    }

    func json(bytes: ByteBuffer) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: bytes))
    }

    /// A database failure as the answer: a refusal of the data (422), or the database out
    /// of reach (503).
    func databaseRefusal(_ error: any Error) -> Refusal {
        if let refusal = error as? Refusal { return refusal }
        if let server = error as? PGError {
            if server.sqlState == SyncSchema.nodeTakenState {
                return Refusal(status: .forbidden, code: "node_taken", message: server.message)
            }
            if server.sqlState.hasPrefix("22") || server.sqlState.hasPrefix("23") {
                return Refusal.malformed("the database refused the operations: \(server.message)")
            }
        }
        logger.warning("database: \(error)")
        return Refusal.unavailable("the database is out of reach; try again")
    }

    func health() async throws -> Response {
        do {
            _ = try await store.pool.run { try $0.query("SELECT 1") }
            let text = feed.isConnected ? "ok\n" : "ok (the change feed is reconnecting: live pulls wait for their timeout)\n"
            return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: text)))
        } catch {
            return Response(status: .serviceUnavailable, headers: [.contentType: "text/plain"],
                            body: .init(byteBuffer: ByteBuffer(string: "the database is out of reach: \(error)\n")))
        }
    }

    func metricsPage() -> Response {
        metrics.waitingPulls.set(to: Double(waiters.count))
        metrics.poolInUse.set(to: Double(pool.inUse))
        metrics.poolSize.set(to: Double(pool.size + 1))
        metrics.feedConnected.set(to: feed.isConnected ? 1 : 0)
        metrics.feedNotifications.set(to: Double(feed.notifications))
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                        body: .init(byteBuffer: ByteBuffer(bytes: metrics.page())))
    }
}

extension Substring {
    /// Without the spaces and tabs at either end.
    var withoutBlanks: Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return self[first ... last]
    }
}

extension TokenRefusal {
    /// A metric label.
    var reason: String {
        switch self {
        case .missing: "missing"
        case .malformed: "malformed"
        case .badSignature: "signature"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .wrongAudience: "audience"
        }
    }
}

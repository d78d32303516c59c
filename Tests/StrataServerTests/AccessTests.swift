import Foundation
import StrataWire
import Testing
@testable import StrataServer

/// Who may do what: a token opens its subject's documents only, a reader only pulls, a
/// node belongs to the subject that first pushed it. Nothing refused is stored.
@Suite(.serialized) struct AccessTests {
    @Test func aTokenForOneDocumentNeitherPullsNorPushesAnother() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let (a, b) = (freshDocument("a"), freshDocument("b"))
        try service.grant(.writer, "alice", a)
        try service.grant(.writer, "bob", b)
        try #require(try await service.push(b, token: try service.token("bob"), [operation()]).status == 200)
        let alice = try service.token("alice")

        let push = try await service.push(b, token: alice, [operation()])
        #expect(push.status == 403 && push.errorCode == "forbidden", "\(push.text)")
        let pull = try await service.pull(b, token: alice)
        #expect(pull.status == 403, "\(pull.text)")
        let info = try await service.request("GET", "info", document: b, token: alice)
        #expect(info.status == 403)
        #expect(try service.stored(b) == 1, "only bob's operation")
        #expect(try await service.push(a, token: alice, [operation()]).status == 200, "her own document")
    }

    @Test func aReaderPullsButCannotPush() async throws {
        let service = try await TestService { $0.membershipCache = .zero }
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.reader, "rita", document)
        try service.grant(.writer, "wes", document)
        #expect(try await service.push(document, token: try service.token("wes"), [operation()]).status == 200)
        let rita = try service.token("rita")
        let refused = try await service.push(document, token: rita, [operation()])
        #expect(refused.status == 403, "\(refused.text)")
        let pulled = try await service.pull(document, token: rita)
        #expect(pulled.status == 200)
        #expect(try JSONDecoder().decode(SyncWire.PullResponse.self, from: pulled.body).operations.count == 1)
        #expect(try service.stored(document) == 1)

        // A revoked member is refused at once (no membership cache here), with the same token.
        let members = try Members(url: service.postgres.url)
        #expect(try members.revoke("rita", on: document))
        members.close()
        #expect(try await service.pull(document, token: rita).status == 403)
    }

    /// A role read is kept for the cache's time, then asked again: a revocation (or a grant)
    /// takes effect within it. Virtual time.
    @Test func aRoleIsKeptForTheMembershipCacheOnly() {
        let cache = MembershipCache(ttl: .seconds(5))
        #expect(cache.role(of: "rita", on: "d", now: 100) == nil, "not read yet")
        cache.note(.reader, of: "rita", on: "d", now: 100)
        cache.note(nil, of: "sam", on: "d", now: 100)
        #expect(cache.role(of: "rita", on: "d", now: 104.9) == .some(.reader))
        #expect(cache.role(of: "sam", on: "d", now: 104.9) == .some(nil), "a known stranger")
        #expect(cache.role(of: "rita", on: "d", now: 105.1) == nil, "asked again")
        let none = MembershipCache(ttl: .zero)
        none.note(.owner, of: "rita", on: "d", now: 100)
        #expect(none.role(of: "rita", on: "d", now: 100) == nil, "0: every request asks PostgreSQL")
    }

    @Test func aNodeBelongsToTheSubjectThatFirstPushedIt() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        try service.grant(.writer, "mallory", document)
        let node = UUID()
        #expect(try await service.push(document, token: try service.token("alice"), [operation(node: node, seq: 1)]).status == 200)

        // Mallory sends an operation under alice's node, beside one of her own: refused whole.
        let forged = try await service.push(document, token: try service.token("mallory"),
                                            [operation(seq: 1), operation(node: node, seq: 2)])
        #expect(forged.status == 403 && forged.errorCode == "node_taken", "\(forged.text)")
        #expect(try service.stored(document) == 1)
        #expect(try service.postgres.sql("SELECT pushed_by FROM strata_operations WHERE document = '\(document)'") == "alice")
        #expect(try service.postgres.sql("SELECT count(*) FROM strata_nodes WHERE document = '\(document)'") == "1",
                "the refused push claimed no node")
        // Alice goes on under her node.
        #expect(try await service.push(document, token: try service.token("alice"), [operation(node: node, seq: 2)]).status == 200)
    }

    @Test func aRetriedPushIsStoredOnce() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        let batch = [operation(seq: 1), operation(seq: 1)].enumerated().map { index, op in
            var op = op
            op.seq = Int64(index + 1)
            return op
        }
        let token = try service.token("alice")
        let first = try JSONDecoder().decode(SyncWire.PushResponse.self, from: try await service.push(document, token: token, batch).body)
        let again = try JSONDecoder().decode(SyncWire.PushResponse.self, from: try await service.push(document, token: token, batch).body)
        #expect(first == SyncWire.PushResponse(inserted: 2, duplicates: 0))
        #expect(again == SyncWire.PushResponse(inserted: 0, duplicates: 2))
        #expect(try service.stored(document) == 2)
    }
}

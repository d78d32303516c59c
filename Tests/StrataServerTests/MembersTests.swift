import Foundation
import StrataWire
import Testing
@testable import StrataServer

/// A document's owners manage its members over HTTP: grants, changes and revocations take
/// effect at the next request with the same tokens; only owners may; the last owner stays.
@Suite struct MembersTests {
    func role(_ role: String) throws -> Data { try JSONEncoder().encode(SyncWire.MemberUpdate(role: role)) }

    func members(_ service: TestService, _ document: String, token: String) async throws -> [String: String] {
        let answer = try await service.request("GET", "members", document: document, token: token)
        #expect(answer.status == 200, "\(answer.text)")
        let list = try JSONDecoder().decode(SyncWire.MemberList.self, from: answer.body)
        return Dictionary(uniqueKeysWithValues: list.members.map { ($0.subject, $0.role) })
    }

    @Test func anOwnerGrantsChangesAndRevokesRolesThatTakeEffectAtOnce() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.owner, "olivia", document)
        let olivia = try service.token("olivia"), bob = try service.token("bob")
        #expect(try await service.pull(document, token: bob).status == 403)   // a stranger, and known as one now

        #expect(try await service.request("PUT", "members/bob", document: document, token: olivia, body: role("reader")).status == 200)
        #expect(try await service.pull(document, token: bob).status == 200)
        #expect(try await service.push(document, token: bob, [operation()]).status == 403)

        #expect(try await service.request("PUT", "members/bob", document: document, token: olivia, body: role("writer")).status == 200)
        #expect(try await service.push(document, token: bob, [operation()]).status == 200)
        #expect(try await members(service, document, token: olivia) == ["olivia": "owner", "bob": "writer"])

        let removed = try await service.request("DELETE", "members/bob", document: document, token: olivia)
        #expect(removed.status == 200 && (try? JSONDecoder().decode(SyncWire.MemberRemoval.self, from: removed.body))?.removed == true)
        #expect(try await service.pull(document, token: bob).status == 403)
        let again = try await service.request("DELETE", "members/bob", document: document, token: olivia)
        #expect((try? JSONDecoder().decode(SyncWire.MemberRemoval.self, from: again.body))?.removed == false)
        #expect(try service.stored(document) == 1)
    }

    @Test func onlyOwnersManageAndNothingChangesWhenRefused() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.owner, "olivia", document)
        try service.grant(.writer, "wendy", document)
        let olivia = try service.token("olivia"), wendy = try service.token("wendy"), stranger = try service.token("sam")
        for token in [wendy, stranger] {
            #expect(try await service.request("GET", "members", document: document, token: token).status == 403)
            #expect(try await service.request("PUT", "members/wendy", document: document, token: token, body: role("owner")).status == 403)
            #expect(try await service.request("DELETE", "members/olivia", document: document, token: token).status == 403)
        }
        let unknown = try await service.request("PUT", "members/wendy", document: document, token: olivia, body: role("admin"))
        #expect(unknown.status == 422 && unknown.errorCode == "malformed")
        let garbage = try await service.request("PUT", "members/wendy", document: document, token: olivia, body: Data("{".utf8))
        #expect(garbage.status == 422)
        #expect(try await members(service, document, token: olivia) == ["olivia": "owner", "wendy": "writer"])
    }

    @Test func theLastOwnerCannotLeaveNorStepDownUntilAnotherIsMade() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.owner, "olivia", document)
        let olivia = try service.token("olivia")
        let leave = try await service.request("DELETE", "members/olivia", document: document, token: olivia)
        #expect(leave.status == 409 && leave.errorCode == "last_owner", "\(leave.text)")
        let stepDown = try await service.request("PUT", "members/olivia", document: document, token: olivia, body: role("writer"))
        #expect(stepDown.status == 409 && stepDown.errorCode == "last_owner")
        #expect(try await members(service, document, token: olivia) == ["olivia": "owner"])

        #expect(try await service.request("PUT", "members/carol", document: document, token: olivia, body: role("owner")).status == 200)
        #expect(try await service.request("DELETE", "members/olivia", document: document, token: olivia).status == 200)
        #expect(try await members(service, document, token: service.token("carol")) == ["carol": "owner"])
        #expect(try await service.pull(document, token: olivia).status == 403)
    }
}

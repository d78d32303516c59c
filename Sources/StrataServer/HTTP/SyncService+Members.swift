import Foundation
import Hummingbird
import StrataWire

/// `members` under a document: its owners list, grant, change and revoke roles over HTTP
/// (``SyncWire/MemberList`` and the rest). A change takes effect on this instance at once
/// and on the others within `[auth] membership_cache_ms`, with the same tokens.
extension SyncService {
    func addMemberRoutes(to router: Router<BasicRequestContext>) {
        router.get("v1/documents/:document/members") { request, context in
            try await self.answer("members", request, context, least: .owner) { _, document, _ in
                let members: [(subject: String, role: Role)]
                do { members = try await self.store.members(of: document) } catch { throw self.databaseRefusal(error) }
                return try self.json(SyncWire.MemberList(members: members.map { SyncWire.Member(subject: $0.subject, role: $0.role.rawValue) }))
            }
        }
        router.put("v1/documents/:document/members/:subject") { request, context in
            try await self.answer("members", request, context, least: .owner) { _, document, _ in
                let subject = try self.memberName(context)
                let update: SyncWire.MemberUpdate = try await self.decode(request)
                guard let role = Role(rawValue: update.role) else {
                    throw Refusal.malformed("role \"\(update.role)\" is none of reader, writer, owner")
                }
                try await self.change(subject, to: role, on: document)
                return try self.json(SyncWire.Member(subject: subject, role: role.rawValue))
            }
        }
        router.delete("v1/documents/:document/members/:subject") { request, context in
            try await self.answer("members", request, context, least: .owner) { _, document, _ in
                let subject = try self.memberName(context)
                return try self.json(SyncWire.MemberRemoval(removed: try await self.change(subject, to: nil, on: document)))
            }
        }
    }

    /// Sets (or removes, nil) `subject`'s role: whether it was a member, for a removal.
    @discardableResult
    private func change(_ subject: String, to role: Role?, on document: String) async throws -> Bool {
        let change: SyncStore.MemberChange
        do { change = try await store.setRole(role, of: subject, on: document) } catch { throw databaseRefusal(error) }
        if change == .lastOwner {
            throw Refusal(status: .conflict, code: "last_owner",
                          message: "\(subject) is the last owner of \"\(document)\": make another owner first")
        }
        memberships.forget(subject, on: document)
        logger.notice("members: \(subject) is \(role.map { "a \($0.rawValue)" } ?? "no longer a member") of \"\(document)\"")
        return change != .removed(wasMember: false)
    }

    /// The subject named by the path, percent-decoded and checked (as `strata-server members`).
    private func memberName(_ context: BasicRequestContext) throws -> String {
        guard let raw = context.parameters.get("subject"), let name = raw.removingPercentEncoding,
              !name.isEmpty, name.utf8.count <= 256, !name.utf8.contains(0) else {
            throw Refusal.malformed("a subject is 1 to 256 bytes, without NUL")
        }
        return name
    }
}

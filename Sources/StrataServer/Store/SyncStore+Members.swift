import Foundation
import StrataPQ

/// A document's members as its owners manage them over HTTP: each change one transaction
/// that first locks the document's owners, so two owners demoting each other at once
/// cannot leave it with none.
extension SyncStore {
    /// What a change did: a role granted, a member removed (or none was), or nothing,
    /// since it would have left no owner.
    enum MemberChange: Equatable { case granted, removed(wasMember: Bool), lastOwner }

    func members(of document: String) async throws -> [(subject: String, role: Role)] {
        try await pool.run { connection in
            try connection.query("SELECT subject, role FROM strata_members WHERE document = $1 ORDER BY subject", [document])
                .compactMap { fields in
                    guard fields.count == 2, let subject = fields[0], let role = fields[1].flatMap(Role.init(rawValue:)) else { return nil }
                    return (subject, role)
                }
        }
    }

    /// Gives `subject` `role` on `document` (nil: removes it).
    func setRole(_ role: Role?, of subject: String, on document: String) async throws -> MemberChange {
        try await pool.transaction { connection in
            let owners = try connection.query(
                "SELECT subject FROM strata_members WHERE document = $1 AND role = 'owner' ORDER BY subject FOR UPDATE", [document]
            ).compactMap { $0.first ?? nil }
            if owners == [subject], role != .owner { return .lastOwner }
            if let role {
                try connection.query("""
                    INSERT INTO strata_members (document, subject, role) VALUES ($1, $2, $3)
                    ON CONFLICT (document, subject) DO UPDATE SET role = excluded.role, granted_at = now()
                    """, [document, subject, role.rawValue])
                return .granted
            }
            let rows = try connection.query("DELETE FROM strata_members WHERE document = $1 AND subject = $2 RETURNING 1", [document, subject])
            return .removed(wasMember: !rows.isEmpty)
        }
    }
}

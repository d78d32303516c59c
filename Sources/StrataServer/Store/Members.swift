import Foundation
import StrataPQ

/// A document's members, managed straight in PostgreSQL (`strata-server members`, tests).
/// The schema is made or upgraded first, so members can be granted before any device came.
public final class Members {
    private let connection: PGConnection

    public init(url: String, timeout: Duration = .seconds(10)) throws {
        connection = try PGConnection(conninfo: url, timeout: timeout)
        _ = try SyncSchema.prepare(connection)
    }

    public func close() { connection.close() }

    public func grant(_ role: Role, to subject: String, on document: String) throws {
        try Self.check(subject: subject, document: document)
        try connection.query("""
            INSERT INTO strata_members (document, subject, role) VALUES ($1, $2, $3)
            ON CONFLICT (document, subject) DO UPDATE SET role = excluded.role, granted_at = now()
            """, [document, subject, role.rawValue])
    }

    /// Whether the subject was a member.
    public func revoke(_ subject: String, on document: String) throws -> Bool {
        let rows = try connection.query("DELETE FROM strata_members WHERE document = $1 AND subject = $2 RETURNING 1", [document, subject])
        return !rows.isEmpty
    }

    public func list(_ document: String) throws -> [(subject: String, role: Role)] {
        try connection.query("SELECT subject, role FROM strata_members WHERE document = $1 ORDER BY subject", [document]).compactMap { fields in
            guard fields.count == 2, let subject = fields[0], let role = fields[1].flatMap(Role.init(rawValue:)) else { return nil }
            return (subject, role)
        }
    }

    static func check(subject: String, document: String) throws {
        guard !subject.isEmpty, subject.utf8.count <= 256, !subject.utf8.contains(0) else {
            throw ServerConfigError("--subject", "must be 1 to 256 bytes, without NUL")
        }
        guard !document.isEmpty, !document.utf8.contains(0) else { throw ServerConfigError("--document", "must not be empty nor hold NUL") }
    }
}

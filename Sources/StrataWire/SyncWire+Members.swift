import Foundation

/// The members of a document, managed over HTTP by its owners (`strata-server members` does
/// the same straight in PostgreSQL):
///
/// - `GET members`: ``MemberList``.
/// - `PUT members/{subject}` with ``MemberUpdate``: grants that role (or changes it); ``Member``.
/// - `DELETE members/{subject}`: ``MemberRemoval``.
///
/// A change that would leave the document without an owner is refused (409, `last_owner`).
extension SyncWire {
    /// The path of `subject`'s membership of `document`.
    public static func memberPath(document: String, subject: String) -> String {
        path(document: document, "members/\(pathSegment(subject))")
    }

    public struct Member: Codable, Sendable, Equatable {
        public var subject: String
        /// `reader`, `writer` or `owner`.
        public var role: String

        public init(subject: String, role: String) {
            self.subject = subject
            self.role = role
        }
    }

    public struct MemberList: Codable, Sendable, Equatable {
        public var members: [Member]

        public init(members: [Member]) { self.members = members }
    }

    public struct MemberUpdate: Codable, Sendable, Equatable {
        public var role: String

        public init(role: String) { self.role = role }
    }

    public struct MemberRemoval: Codable, Sendable, Equatable {
        /// Whether the subject was a member.
        public var removed: Bool

        public init(removed: Bool) { self.removed = removed }
    }
}

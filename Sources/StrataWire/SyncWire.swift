import Foundation

/// The sync service's HTTP API, as JSON bodies: what a device sends and what `strata-server`
/// answers. One definition for both sides (the device's transport, `StrataHTTP`, and the
/// service import this module, which needs nothing but Foundation), so they cannot drift. Every route is under `/v1/documents/{document}/` and needs
/// `Authorization: Bearer TOKEN`; docs/sync.md lists them.
public enum SyncWire {
    /// The API's version, in every path (`/v1/`).
    public static let version = "v1"

    /// The path of `route` of `document` (the name percent-encoded as one path segment).
    public static func path(document: String, _ route: String) -> String {
        "/\(version)/documents/\(pathSegment(document))/\(route)"
    }

    /// `name` as one path segment: everything but unreserved characters percent-encoded.
    public static func pathSegment(_ name: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }

    /// One operation on the wire. `payload` is base64 in JSON.
    public struct Operation: Codable, Sendable, Equatable {
        public var id: UUID
        public var node: UUID
        public var seq: Int64
        public var hlc: Int64
        public var kind: String
        public var payload: Data

        public init(id: UUID, node: UUID, seq: Int64, hlc: Int64, kind: String, payload: Data) {
            self.id = id
            self.node = node
            self.seq = seq
            self.hlc = hlc
            self.kind = kind
            self.payload = payload
        }
    }

    /// `GET info`: who the service is, what the caller may do, and the time.
    public struct Info: Codable, Sendable, Equatable {
        /// The server's node id (`SyncServerInfo.node`).
        public var node: UUID
        public var schemaVersion: Int
        /// The service's version and its database's.
        public var server: String
        public var document: String
        /// The caller's role on the document: `reader`, `writer` or `owner`.
        public var role: String
        /// The service's wall clock, Unix milliseconds.
        public var timeMilliseconds: Int64

        public init(node: UUID, schemaVersion: Int, server: String, document: String, role: String, timeMilliseconds: Int64) {
            self.node = node
            self.schemaVersion = schemaVersion
            self.server = server
            self.document = document
            self.role = role
            self.timeMilliseconds = timeMilliseconds
        }

        enum CodingKeys: String, CodingKey {
            case node, server, document, role
            case schemaVersion = "schema_version"
            case timeMilliseconds = "time_ms"
        }
    }

    /// `POST push`: operations to store, all or none (a malformed batch is refused whole).
    public struct PushRequest: Codable, Sendable, Equatable {
        public var operations: [Operation]

        public init(operations: [Operation]) { self.operations = operations }
    }

    /// What a push stored, and what the service had already (by node and sequence, or id).
    public struct PushResponse: Codable, Sendable, Equatable {
        public var inserted: Int
        public var duplicates: Int

        public init(inserted: Int, duplicates: Int) {
            self.inserted = inserted
            self.duplicates = duplicates
        }
    }

    /// `POST pull`: the operations of nodes other than `exclude` that `clock` lacks, after
    /// `after` in the service's order, at most `limit`. With `waitMilliseconds` above zero
    /// a pull that finds nothing waits (up to that, or the service's own limit) and answers
    /// as soon as something is pushed to the document. `limit` 0 returns no operation:
    /// only whether there is one (`hasMore`) and the position of the newest (`cursor`),
    /// which is how a device listens.
    public struct PullRequest: Codable, Sendable, Equatable {
        public var exclude: UUID
        /// Node id (a UUID string) → the highest sequence the device has of it.
        public var clock: [String: Int64]
        public var after: Int64
        public var limit: Int
        public var waitMilliseconds: Int

        public init(exclude: UUID, clock: [UUID: Int64], after: Int64, limit: Int, waitMilliseconds: Int = 0) {
            self.exclude = exclude
            self.clock = Dictionary(clock.map { ($0.key.uuidString, $0.value) }, uniquingKeysWith: max)
            self.after = after
            self.limit = limit
            self.waitMilliseconds = waitMilliseconds
        }

        enum CodingKeys: String, CodingKey {
            case exclude, clock, after, limit
            case waitMilliseconds = "wait_ms"
        }
    }

    public struct PullResponse: Codable, Sendable, Equatable {
        public var operations: [Operation]
        /// The service position of the last operation returned (of the newest, with limit 0);
        /// `after` when there is none.
        public var cursor: Int64
        public var hasMore: Bool

        public init(operations: [Operation], cursor: Int64, hasMore: Bool) {
            self.operations = operations
            self.cursor = cursor
            self.hasMore = hasMore
        }

        enum CodingKeys: String, CodingKey {
            case operations, cursor
            case hasMore = "has_more"
        }
    }

    /// Every refusal's body: `{"error": {"status": 403, "code": "forbidden", "message": "…"}}`.
    public struct ErrorBody: Codable, Sendable, Equatable {
        public struct Detail: Codable, Sendable, Equatable {
            public var status: Int
            /// A stable word for programs: `unauthorized`, `forbidden`, `not_found`,
            /// `too_large`, `malformed`, `node_taken`, `read_only` (a reader's push),
            /// `last_owner`, `too_many_requests`, `unavailable`.
            public var code: String
            public var message: String
        }

        public var error: Detail

        public init(status: Int, code: String, message: String) {
            error = Detail(status: status, code: code, message: message)
        }
    }
}

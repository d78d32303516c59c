import Foundation

/// What a sync server does for Strata: store operations pushed by a device, hand out the
/// operations of the others, tell the time. `SyncClient` drives it from a task of its
/// own; the tick thread never waits on it.
///
/// Implementations: `PostgresTransport` (the `StrataPostgres` library), which creates its
/// schema on first connect.
///
/// Every call may throw ``SyncError``: `.unreachable` when the server could not be reached
/// or the connection broke (the client backs off and waits for the network), `.rejected`
/// when the server refused what was sent (a poison operation: the client isolates it and
/// counts its attempts), `.failed` for anything else (backs off, counts nothing).
public protocol SyncTransport: Sendable {
    /// Connects if not connected (creating the server's schema the first time) and says
    /// who the server is.
    func connect() async throws -> SyncServerInfo
    /// Stores `operations` in ONE round trip. An operation the server has already (by id,
    /// or by node and sequence) is ignored, not an error: a retried push is harmless.
    func push(_ operations: [LoggedOperation]) async throws -> PushReceipt
    /// The operations of nodes other than `node` that `clock` lacks (sequence above
    /// `clock[node]`), after `cursor` in the server's order, at most `limit`.
    func pull(excluding node: NodeID, clock: [NodeID: Int64], after cursor: Int64, limit: Int) async throws -> PulledPage
    /// The server's wall clock, Unix milliseconds.
    func serverClock() async throws -> Int64
    /// Closes the connection (the next call connects again).
    func disconnect() async
    /// Starts telling `changed` when the server has something new for this document (another
    /// device pushed), on a connection of its own, until ``stopListening()``. The news only
    /// wakes the client, which pulls by position as always: a lost notification costs at
    /// most one safety poll. Returns false when this transport cannot listen; the client
    /// then polls every `pull_interval_ms`. By default: false.
    func startListening(_ changed: @escaping @Sendable (ListenEvent) -> Void) async -> Bool
    /// Stops listening (waits for the listener to end, bounded by the request timeout).
    func stopListening() async
}

extension SyncTransport {
    public func startListening(_ changed: @escaping @Sendable (ListenEvent) -> Void) async -> Bool { false }
    public func stopListening() async {}
}

/// What a listening transport tells the sync client.
public enum ListenEvent: Sendable, Equatable {
    /// Listening (again): whatever was pushed while not listening is unknown, so pull now.
    case listening
    /// The server says the document changed (one event for any number of notifications
    /// read at once).
    case changed
    /// The listening connection is gone (the reason); it is made again with backoff. Until
    /// then the client polls every `pull_interval_ms`.
    case lost(String)
}

/// Who the server is: its own node id (its acknowledgements are recorded under it, so
/// the log's retention keeps what it lacks) and its schema version.
public struct SyncServerInfo: Sendable, Equatable {
    public var node: NodeID
    public var schemaVersion: Int
    /// For people: the server's version string and the document's name.
    public var description: String

    public init(node: NodeID, schemaVersion: Int, description: String) {
        self.node = node
        self.schemaVersion = schemaVersion
        self.description = description
    }
}

/// What a push did: operations stored, and ones the server had already.
public struct PushReceipt: Sendable, Equatable {
    public var inserted: Int
    public var duplicates: Int

    public init(inserted: Int, duplicates: Int) {
        self.inserted = inserted
        self.duplicates = duplicates
    }
}

/// One page of a pull, in the server's order.
public struct PulledPage: Sendable, Equatable {
    public var operations: [LoggedOperation]
    /// The server position of the last operation (where the next page starts).
    public var cursor: Int64
    /// The page was full: there may be more.
    public var hasMore: Bool

    public init(operations: [LoggedOperation], cursor: Int64, hasMore: Bool) {
        self.operations = operations
        self.cursor = cursor
        self.hasMore = hasMore
    }
}

/// Why a sync call failed.
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The server could not be reached, or the connection broke or timed out.
        case unreachable
        /// The server refused the data (a constraint, a trigger): the operations sent are at fault.
        case rejected
        /// Anything else (a schema newer than this build, a protocol error).
        case failed
        /// The server answers, and says the connection can never work as configured (no such
        /// database or role, a password it refuses, an option it does not know): the sync
        /// stops and says so, rather than trying again for the whole run.
        case misconfigured
        /// The server lets this device read the document but not write it (a reader): its
        /// operations stay in the outbox, pushing pauses (tried again every
        /// `safety_pull_secs`, so a role granted later is found) and pulling goes on.
        case readOnly
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}

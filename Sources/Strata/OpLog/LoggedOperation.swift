import Foundation

/// A replica's identity in the operation log: a 128-bit UUID, created with the document
/// (`replica.node_id`) and stable across restarts. The same type as an entity's id.
public typealias NodeID = EntityID

/// One entry of the operation log (what the sync layer exchanges): who
/// made it and in what order, when causally, and an opaque payload of a given kind.
public struct LoggedOperation: Sendable, Equatable {
    /// Unique across every replica: an operation that comes back under any key is the same one.
    public var id: EntityID
    /// The replica that made it, and its place in that replica's sequence (1, 2, 3…).
    public var node: NodeID
    public var seq: Int64
    public var timestamp: HybridTimestamp
    public var kind: String
    public var payload: [UInt8]

    public init(id: EntityID = EntityID(), node: NodeID, seq: Int64, timestamp: HybridTimestamp, kind: String, payload: [UInt8]) {
        self.id = id
        self.node = node
        self.seq = seq
        self.timestamp = timestamp
        self.kind = kind
        self.payload = payload
    }

    /// What an operation moved out of an array leaves in its place (nothing to retain or free).
    static let placeholder = LoggedOperation(id: EntityID(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
                                             node: NodeID(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
                                             seq: 0, timestamp: HybridTimestamp(rawValue: 0), kind: "", payload: [])

    /// What ``Engine/receiveOperation(_:)`` did with an operation from a peer.
    public enum Receipt: Sendable, Equatable {
        /// Logged; its node's sequence is contiguous up to it.
        case accepted
        /// Logged, with earlier operations of its node still missing (a gap, kept and reported).
        case acceptedAfterGap
        /// Already logged (same node and sequence): nothing written.
        case duplicate
    }
}

extension Array where Element == LoggedOperation {
    /// Moves the operation at `index` out, leaving ``LoggedOperation/placeholder``: no
    /// retain of its kind and payload, as a copy would take (a pull brings thousands).
    mutating func moveOut(at index: Int) -> LoggedOperation {
        var operation = LoggedOperation.placeholder
        swap(&operation, &self[index])
        return operation
    }
}

/// A hybrid logical clock reading: wall-clock milliseconds in the high 48 bits, a counter
/// in the low 16.
///
/// Why hybrid, not Lamport: both order every operation after everything its replica had
/// seen, but a hybrid timestamp also stays within clock skew of the wall time, so when
/// two devices edit the same thing offline, "the later edit wins" means later in time,
/// as a user expects, rather than "the replica that had seen more". Ties are broken by
/// node id (``LoggedOperation/causallyPrecedes(_:)``).
public struct HybridTimestamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int64

    public init(rawValue: Int64) { self.rawValue = rawValue }

    public init(milliseconds: Int64, counter: Int64 = 0) { rawValue = milliseconds << 16 | (counter & 0xFFFF) }

    public var milliseconds: Int64 { rawValue >> 16 }
    public var counter: Int64 { rawValue & 0xFFFF }

    public static func < (a: HybridTimestamp, b: HybridTimestamp) -> Bool { a.rawValue < b.rawValue }

    public var description: String { "\(milliseconds).\(counter)" }
}

extension LoggedOperation {
    /// The total order every replica agrees on: timestamp, then node id (bytes), then sequence.
    public func causallyPrecedes(_ other: LoggedOperation) -> Bool {
        if timestamp != other.timestamp { return timestamp < other.timestamp }
        if node != other.node {
            return node.withBytes { a in other.node.withBytes { b in a.lexicographicallyPrecedes(b) } }
        }
        return seq < other.seq
    }
}

/// The hybrid logical clock of one replica. Tick thread (inside ``OperationLog``).
///
/// Every reading is later than the last one and than every timestamp observed from a
/// peer, and never earlier than the wall clock: `max(wall, last + 1)`.
struct HybridLogicalClock {
    private(set) var last: HybridTimestamp

    init(last: HybridTimestamp = HybridTimestamp(rawValue: 0)) { self.last = last }

    /// A timestamp for a local event at wall time `milliseconds`.
    mutating func next(wallMilliseconds milliseconds: Int64) -> HybridTimestamp {
        // Saturating: a clock at the top stays there rather than trap (the open never
        // starts it past ``OperationLog/latestPlausibleTimestamp``, so this is damage's case).
        last = HybridTimestamp(rawValue: max(HybridTimestamp(milliseconds: milliseconds).rawValue,
                                             last.rawValue < .max ? last.rawValue + 1 : .max))
        return last
    }

    /// A peer's timestamp was seen: later local ones come after it.
    mutating func observe(_ remote: HybridTimestamp) {
        if remote > last { last = remote }
    }
}

/// One acknowledgement of a batch: `peer` has every operation of `node` through `seq`.
struct PeerAck: Sendable, Equatable {
    var peer: NodeID
    var node: NodeID
    var seq: Int64
}

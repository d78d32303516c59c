/// The order key of an operation, for "the last writer wins": keep the stamp of the
/// operation last applied to a thing, and apply another only if its stamp is greater.
/// Total, and the same on every device (``LoggedOperation/causallyPrecedes(_:)``).
public struct OperationStamp: Comparable, Hashable, Sendable, Codable {
    public var timestamp: Int64
    /// The node's 16 bytes, as two big-endian halves (compared as bytes).
    public var nodeHigh: UInt64
    public var nodeLow: UInt64

    public init(_ operation: LoggedOperation) {
        self.init(timestamp: operation.timestamp, node: operation.node)
    }

    init(timestamp: HybridTimestamp, node: NodeID) {
        self.timestamp = timestamp.rawValue
        (nodeHigh, nodeLow) = node.withBytes { bytes in
            (bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self).bigEndian, bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self).bigEndian)
        }
    }

    public init(timestamp: Int64, nodeHigh: UInt64, nodeLow: UInt64) {
        self.timestamp = timestamp
        self.nodeHigh = nodeHigh
        self.nodeLow = nodeLow
    }

    /// Before every operation.
    public static let zero = OperationStamp(timestamp: .min, nodeHigh: 0, nodeLow: 0)

    /// Whether this is ``zero`` (no stamp), without loading the constant.
    var isZero: Bool { timestamp == .min && nodeHigh == 0 && nodeLow == 0 }

    /// The stamp of a default value `node` wrote (a value that only fills a gap): above
    /// ``zero``, below every operation's (a hybrid timestamp of 0 is 1970's first
    /// millisecond), so it loses to any value a device wrote; between two defaults, the
    /// higher node wins, the same on every device.
    static func ofDefault(node: NodeID) -> OperationStamp {
        OperationStamp(timestamp: HybridTimestamp(rawValue: 0), node: node)
    }

    /// Whether this is a default value's stamp (``ofDefault(node:)``).
    var isDefault: Bool { timestamp == 0 }

    /// Whether both stamps are of one node.
    func sameNode(as other: OperationStamp) -> Bool {
        nodeHigh == other.nodeHigh && nodeLow == other.nodeLow
    }

    public static func < (a: OperationStamp, b: OperationStamp) -> Bool {
        (a.timestamp, a.nodeHigh, a.nodeLow) < (b.timestamp, b.nodeHigh, b.nodeLow)
    }
}

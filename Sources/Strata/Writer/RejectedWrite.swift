import Foundation

/// One row a commit rejected for a reason retrying cannot fix (a constraint, a value
/// larger than SQLite allows): isolated from its batch, whose other rows committed, and
/// parked instead of dropped. Parked in the document's `rejected_writes` table, or, when
/// the database itself refuses it, in the side file `PATH.rejected` (JSON lines).
///
/// Read them with ``Engine/rejectedWrites()``; put the components and settings back in the
/// world for the next flush with ``Engine/replayRejectedWrites()`` once the cause is fixed.
public struct RejectedWrite: Sendable, Equatable, Codable {
    public enum Kind: String, Sendable, Codable {
        case component, componentRemoval = "component_removal", entityInsert = "entity_insert",
             entityDelete = "entity_delete", setting, settingRemoval = "setting_removal", operation,
             vectorClock = "vector_clock", peerAck = "peer_ack"
        /// A row the salvage of a damaged file read but the new file refused (a value
        /// the damage changed fails a constraint): `name` is its table, `number` its key,
        /// `payload` the row as it read (JSON, a column's value per name, a BLOB in hex; text
        /// bytes that are not UTF-8 come out as U+FFFD).
        /// Kept for a person to look at: never replayed.
        case salvagedRow = "salvaged_row"
    }

    /// Its row in `rejected_writes`; nil when it is in the side file.
    public var id: Int64?
    /// Unix milliseconds.
    public var rejectedAt: Int64
    /// What SQLite said.
    public var error: String
    public var kind: Kind
    /// The entity (component and entity rows), the node (operations, clock rows), the peer (acknowledgements).
    public var entity: EntityID?
    /// The entity's number in the file (component and entity rows).
    public var entityNumber: Int64?
    /// The component type, the setting's key, the operation's kind.
    public var name: String?
    /// The payload version (components), the sequence (operations, clock rows, acknowledgements).
    public var number: Int64?
    /// The encoded component, the setting's stored text, the operation's payload.
    public var payload: [UInt8]?
    /// An operation's id and hybrid timestamp (``HybridTimestamp/rawValue``): with them it
    /// is logged again exactly as it was.
    public var operationID: EntityID?
    public var timestamp: Int64?

    public init(id: Int64? = nil, rejectedAt: Int64, error: String, kind: Kind, entity: EntityID? = nil,
                entityNumber: Int64? = nil, name: String? = nil, number: Int64? = nil, payload: [UInt8]? = nil,
                operationID: EntityID? = nil, timestamp: Int64? = nil) {
        self.id = id
        self.rejectedAt = rejectedAt
        self.error = error
        self.kind = kind
        self.entity = entity
        self.entityNumber = entityNumber
        self.name = name
        self.number = number
        self.payload = payload
        self.operationID = operationID
        self.timestamp = timestamp
    }

    /// The operation this row parked, if it is one that can be logged again.
    var operation: LoggedOperation? {
        guard kind == .operation, let node = entity, let seq = number, let kind = name, let operationID, let timestamp
        else { return nil }
        return LoggedOperation(id: operationID, node: node, seq: seq, timestamp: HybridTimestamp(rawValue: timestamp),
                               kind: kind, payload: payload ?? [])
    }
}

extension RejectedWrite {
    /// A parked component row's value (its payload, at the payload version it was parked with).
    func decode<C: Component>(_ type: C.Type) throws -> C {
        try (payload ?? []).withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return try C(from: &reader, version: Int(number ?? 1))
        }
    }
}

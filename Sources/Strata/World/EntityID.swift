import Foundation

/// The stable identity of an entity: a 128-bit UUID that survives restarts.
///
/// Stored as a 16-byte BLOB (`entities.id`). Within one run, prefer the cheaper
/// ``Entity`` handle; `EntityID` is what persists and what peers exchange.
public struct EntityID: Hashable, Sendable, CustomStringConvertible {
    public let uuid: UUID

    /// A new random (version 4) id. ``World/spawn(id:)`` makes time-ordered ones (version 7).
    public init() { uuid = UUID() }

    /// Whether the id is a UUID version 7: its first 48 bits are the Unix milliseconds it
    /// was made at, so ids made later sort after it.
    public var isTimeOrdered: Bool { uuid.uuid.6 >> 4 == 7 }

    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Rebuilds an id from its 16 stored bytes; nil if there are not exactly 16.
    public init?(bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 16 else { return nil }
        // A UUID is its 16 bytes (`uuid_t`, trivial): loaded as one, not built through
        // `UUID(uuid:)` (a pull reads thousands of ids).
        uuid = bytes.loadUnaligned(as: UUID.self)
    }

    /// Calls `body` with the id's 16 bytes, as stored in the database.
    @inline(__always)
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeBytes(of: uuid.uuid, body)
    }

    public var description: String { uuid.uuidString.lowercased() }

    // Hashed and compared as two words: `UUID`'s own hashing feeds its bytes one call at a
    // time, and an entity's id is looked up on every spawn, reload and pulled operation.
    @inline(__always)
    var words: (UInt64, UInt64) {
        withUnsafeBytes(of: uuid.uuid) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
    }

    public static func == (a: EntityID, b: EntityID) -> Bool { a.words == b.words }

    public func hash(into hasher: inout Hasher) {
        let (high, low) = words
        hasher.combine(high)
        hasher.combine(low)
    }
}

/// An entity's number in one database file (`entities.num`): what component rows and
/// segment records refer to, in a few bytes instead of the 16 of its ``EntityID``.
/// Assigned at spawn, in spawn order; never reused while a record may refer to it.
@usableFromInline
typealias EntityNumber = Int64

/// A handle to a live entity in one ``World``: an index plus a generation.
///
/// Handles are cheap (8 bytes) and O(1) to resolve; a handle to a despawned entity
/// is detected by its generation and resolves to nothing. Handles do not survive a
/// restart: keep the ``EntityID`` for that.
public struct Entity: Hashable, Sendable, CustomStringConvertible {
    /// Slot in the world's entity table.
    public let index: UInt32
    /// Incremented each time the slot is reused.
    public let generation: UInt32

    @usableFromInline
    init(index: UInt32, generation: UInt32) {
        self.index = index
        self.generation = generation
    }

    public var description: String { "Entity(\(index)v\(generation))" }
}

/// As a UUID string in JSON and other formats; 16 bytes in a component's payload
/// (``PayloadEncoder``).
extension EntityID: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let uuid = UUID(uuidString: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a UUID: \(text)"))
        }
        self.init(uuid)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

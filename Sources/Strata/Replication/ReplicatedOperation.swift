import Foundation

/// The operations Strata itself logs for replicated components: what one device's
/// change of a replicated (entity, type) is on every other device.
///
/// Each rides the operation log like any other (its own kind, so a host's hook never
/// sees it), and is pushed, pulled, deduplicated and retained the same way. The payload:
///
/// - `strata.component`: a format byte (1, or 2 for a default: a value that only fills a
///   gap, ``World/insertDefault(_:for:)``), the entity's 16-byte id, the type's name, the
///   payload version it was encoded with, then the value's payload bytes, or nothing
///   (a flag byte says which) for a removal. A default is stamped below every other
///   value (``OperationStamp/ofDefault(node:)``): it loses to any value a device wrote,
///   whenever that arrives;
/// - `strata.despawn`: a format byte (1) and the entity's id. Kept in the log, it is the
///   entity's tombstone (read back at every open): a despawn wins over every edit of the
///   entity, concurrent or later, and its id never comes back.
enum ReplicatedOperation: Equatable {
    /// `payload`: the value's bytes (nil: a removal); decoded, a slice of the operation's own.
    /// `isDefault`: a value that only fills a gap (format 2).
    case component(entity: EntityID, type: String, version: Int, payload: ArraySlice<UInt8>?, isDefault: Bool = false)
    case despawn(entity: EntityID)

    static let componentKind = "strata.component"
    static let despawnKind = "strata.despawn"
    static let format: UInt8 = 1
    /// The format byte of a default value's `strata.component` (a build that reads only
    /// format 1 keeps it as malformed: never applied, never dropped).
    static let defaultFormat: UInt8 = 2

    /// Whether operations of `kind` are Strata's own (applied to the world, not handed to a host).
    static func isReplicated(kind: String) -> Bool { kind == componentKind || kind == despawnKind }

    /// Makes a kind equal to one of Strata's the very same string, so that the tick
    /// thread's comparisons of it stop at its first word (the sync thread pays for the
    /// bytes instead, once per pulled operation).
    static func canonicalize(_ kind: inout String) {
        if kind == componentKind {
            kind = componentKind
        } else if kind == despawnKind {
            kind = despawnKind
        }
    }

    var kind: String {
        switch self {
        case .component: Self.componentKind
        case .despawn: Self.despawnKind
        }
    }

    var entity: EntityID {
        switch self {
        case .component(let entity, _, _, _, _), .despawn(let entity): entity
        }
    }

    func encoded() -> [UInt8] {
        var writer = PayloadWriter(capacity: 48)
        switch self {
        case let .component(entity, type, version, payload, isDefault):
            writer.write(isDefault ? Self.defaultFormat : Self.format)
            writer.write(entity)
            writer.write(type)
            writer.write(version)
            writer.write(payload != nil)
            if let payload {
                writer.write(UInt64(payload.count))
                payload.withUnsafeBytes { writer.append($0) }
            }
        case let .despawn(entity):
            writer.write(Self.format)
            writer.write(entity)
        }
        return writer.bytes
    }

    /// Decodes an operation of a replicated `kind`; throws on anything malformed (a
    /// peer's bytes: never trusted). `knownType`: see ``ReplicatedEdit/parse(kind:payload:knownType:)``.
    init(kind: String, payload: [UInt8], knownType: String? = nil) throws {
        let edit = try payload.withUnsafeBytes { try ReplicatedEdit.parse(kind: kind, payload: $0, knownType: knownType) }
        switch edit {
        case let .component(entity, type, version, value, isDefault):
            self = .component(entity: entity, type: type, version: version, payload: value.map { payload[$0] }, isDefault: isDefault)
        case let .despawn(entity):
            self = .despawn(entity: entity)
        }
    }
}

/// A replicated operation as the tick thread applies it: decoded in place from the
/// operation's payload, the value's bytes only located (a range of the payload), so
/// that nothing retains the payload, an array another thread made (a pull brings
/// thousands: each retain would take its cache line from the thread that wrote it).
enum ReplicatedEdit {
    case component(entity: EntityID, type: String, version: Int, value: Range<Int>?, isDefault: Bool)
    case despawn(entity: EntityID)

    /// `known` if `bytes` spell it, else a new string of them.
    private static func name(_ bytes: UnsafeRawBufferPointer, like known: String?) -> String {
        if var known, known.withUTF8({ name in
            guard name.count == bytes.count else { return false }
            guard let a = name.baseAddress, let b = bytes.baseAddress else { return true }   // both empty
            return memcmp(a, b, bytes.count) == 0
        }) {
            return known
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes `payload`, an operation of a replicated `kind`; throws on anything
    /// malformed. `knownType`: the type name the last operation named (operations come
    /// in runs of one type): when this one names it too, its string is shared rather
    /// than made again.
    static func parse(kind: String, payload bytes: UnsafeRawBufferPointer, knownType: String?) throws -> ReplicatedEdit {
        var reader = PayloadReader(bytes)
        let format: UInt8 = try reader.read()
        let isDefault = format == ReplicatedOperation.defaultFormat && kind == ReplicatedOperation.componentKind
        guard format == ReplicatedOperation.format || isDefault else {
            throw PayloadError.invalid("\(kind) format \(format), this build reads \(ReplicatedOperation.format)"
                                       + (kind == ReplicatedOperation.componentKind ? " and \(ReplicatedOperation.defaultFormat)" : ""))
        }
        let entity: EntityID = try reader.read()
        let decoded: ReplicatedEdit
        switch kind {
        case ReplicatedOperation.componentKind:
            let type = name(try reader.readBytes(), like: knownType)
            let version: Int = try reader.read()
            guard !type.isEmpty, version >= 1 else { throw PayloadError.invalid("\(kind): type \"\(type)\" version \(version)") }
            let present: Bool = try reader.read()
            var value: Range<Int>?
            if present {
                let count = try reader.readBytes().count
                value = reader.offset - count ..< reader.offset
            }
            decoded = .component(entity: entity, type: type, version: version, value: value, isDefault: isDefault)
        case ReplicatedOperation.despawnKind:
            decoded = .despawn(entity: entity)
        default:
            throw PayloadError.invalid("\(kind) is not a replicated operation")
        }
        guard reader.isAtEnd else { throw PayloadError.invalid("\(kind): \(bytes.count - reader.offset) bytes past the end") }
        return decoded
    }
}

import Foundation

/// The replicated world the server's operations must give, worked out by the sync checker
/// itself from the documented rule, without the engine's code: every `strata.component`
/// operation read from its bytes (docs/sync.md, *The operations*), the value of each
/// (entity, type) the one with the highest stamp (hybrid timestamp, then node id as
/// bytes; a default below every other), a removal leaving none, and every entity some
/// device despawned gone whatever was written after. Its digest is computed as
/// `WorldDigest` documents it (FNV-1a over the entity's id, then the payload; mixed; summed
/// per type; each type's sum mixed with its name's hash and summed).
struct SyncTortureReference {
    /// An operation as the server holds it.
    struct Operation {
        var node: [UInt8]   // 16 bytes
        var seq: Int64
        var hlc: Int64
        var kind: String
        var payload: [UInt8]
    }

    private struct Key: Hashable {
        var entity: [UInt8]
        var type: String
    }

    private struct Stamp: Comparable {
        var timestamp: Int64
        var node: [UInt8]
        static func < (a: Stamp, b: Stamp) -> Bool {
            a.timestamp != b.timestamp ? a.timestamp < b.timestamp : a.node.lexicographicallyPrecedes(b.node)
        }
    }

    private(set) var replicatedDigest = ""
    /// Operations whose bytes do not read as the format says (none expected).
    private(set) var unreadable = 0
    /// Values of one node replaced by another node's later value (defaults aside), and of
    /// those, the ones under 250 ms apart.
    private(set) var overwrites = 0
    private(set) var overwritesUnder250ms = 0
    private(set) var values = 0

    init(_ operations: [Operation]) {
        var winners: [Key: (stamp: Stamp, payload: [UInt8]?)] = [:]
        var despawned: Set<[UInt8]> = []
        var edits: [(Stamp, Key)] = []
        for operation in operations {
            var reader = ByteReader(operation.payload)
            guard let format = reader.byte(), let entity = reader.bytes(16) else { unreadable += 1; continue }
            switch operation.kind {
            case "strata.despawn":
                guard format == 1, reader.atEnd else { unreadable += 1; continue }
                despawned.insert(entity)
            case "strata.component":
                guard format == 1 || format == 2, let nameLength = reader.varint(), let name = reader.bytes(Int(nameLength)),
                      reader.varint() != nil, let present = reader.byte() else { unreadable += 1; continue }
                var payload: [UInt8]?
                if present == 1 {
                    guard let count = reader.varint(), let bytes = reader.bytes(Int(count)) else { unreadable += 1; continue }
                    payload = bytes
                }
                guard reader.atEnd else { unreadable += 1; continue }
                let key = Key(entity: entity, type: String(decoding: name, as: UTF8.self))
                let stamp = Stamp(timestamp: format == 2 ? 0 : operation.hlc, node: operation.node)
                edits.append((stamp, key))
                if let current = winners[key], !(current.stamp < stamp) { continue }
                winners[key] = (stamp, payload)
            default:
                continue
            }
        }
        // Overwrites, as the stamps order the edits of each key.
        edits.sort { $0.0 < $1.0 }
        var last: [Key: Stamp] = [:]
        for (stamp, key) in edits {
            if let before = last[key], before.node != stamp.node, before.timestamp != 0, stamp.timestamp != 0 {
                overwrites += 1
                if (stamp.timestamp >> 16) - (before.timestamp >> 16) < 250 { overwritesUnder250ms += 1 }
            }
            last[key] = stamp
        }
        var sums: [String: UInt64] = [:]
        for (key, winner) in winners where !despawned.contains(key.entity) {
            guard let payload = winner.payload else { continue }
            let hash = Self.fnv(payload, from: Self.fnv(key.entity))
            sums[key.type, default: 0] &+= Self.mix(hash ^ UInt64(payload.count))
            values += 1
        }
        var total: UInt64 = 0
        for (type, sum) in sums { total &+= Self.mix(sum ^ Self.fnv(Array(type.utf8))) }
        replicatedDigest = Self.hex(total)
    }

    private static func fnv(_ bytes: [UInt8], from start: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
        var hash = start
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// Reads the operations' format: bytes, and LEB128 varints.
private struct ByteReader {
    private let bytes: [UInt8]
    private var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { offset == bytes.count }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard count >= 0, count <= bytes.count - offset else { return nil }
        defer { offset += count }
        return Array(bytes[offset ..< offset + count])
    }

    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while let byte = byte() {
            guard shift < 64 else { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }
}

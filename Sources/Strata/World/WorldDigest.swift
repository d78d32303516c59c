/// A stable fingerprint of a world, per component type and over the replicated types, so
/// that devices, tests and operators can compare documents (``World/digest()``,
/// `strata inspect --json`'s `digest`).
///
/// A type's digest covers, for every entity that has a value of it, the entity's id and
/// the value's payload bytes (``Component/encode(to:)``, so floats count bit for bit),
/// combined so that the order of entities does not matter. Two worlds with the same
/// entities holding the same values have the same digests, whatever happened in between.
/// Only persisted tiers count (an ephemeral value is never in a file). It is a 64-bit
/// fingerprint (FNV-1a per entry, mixed, then summed), not a cryptographic hash.
///
/// A file's digest equals its world's once every value is in the encoding of the build's
/// ``Component/payloadVersion`` (older payloads are rewritten at their next change, or by
/// maintenance's `rewrite_old_payloads`).
public struct WorldDigest: Sendable, Equatable, Codable {
    /// Per type name: the type's digest, 16 hex digits.
    public var types: [String: String]
    /// Over every type whose ``Replication`` is not `local`; the digest of nothing if none.
    public var replicated: String

    public init(types: [String: String], replicated: String) {
        self.types = types
        self.replicated = replicated
    }

    /// Sums entry fingerprints per type; the sum of no entries is zero.
    struct Accumulator {
        private(set) var sums: [String: UInt64] = [:]

        /// Adds `entity`'s value of `type` (`payload`: its encoding).
        mutating func add(type: String, entity: EntityID, payload: UnsafeRawBufferPointer) {
            let hash = Self.fnv(payload, from: entity.withBytes { Self.fnv($0) })
            sums[type, default: 0] &+= Self.mix(hash ^ UInt64(payload.count))
        }

        /// The digest, with `replicated` the types that count toward `replicated`.
        func digest(replicated: Set<String>) -> WorldDigest {
            var total: UInt64 = 0
            for (type, sum) in sums where replicated.contains(type) { total &+= Self.mix(sum ^ Self.fnv(type.utf8)) }
            return WorldDigest(types: sums.mapValues(Self.hex), replicated: Self.hex(total))
        }

        /// SplitMix64's finalizer: spreads an FNV hash over all 64 bits before the sum.
        static func mix(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9e37_79b9_7f4a_7c15
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }

        /// FNV-1a over `bytes`, continuing from `hash`.
        static func fnv<Bytes: Sequence<UInt8>>(_ bytes: Bytes, from hash: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
            var hash = hash
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            return hash
        }

        static func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
    }
}

extension World {
    /// The world's digest (``WorldDigest``): every persisted component value by its entity's
    /// id. O(world); tick thread.
    public func digest() -> WorldDigest {
        owner.check("World")
        var accumulator = WorldDigest.Accumulator()
        var writes: [ComponentWrite] = []
        var ids: [EntityNumber: EntityID] = [:]
        for record in records where record.alive { ids[record.number] = record.id }
        records.withUnsafeBufferPointer { records in
            for column in columns where column.componentType.tier != .ephemeral {
                writes.removeAll(keepingCapacity: true)
                persistedWrites(of: column, records: records, into: &writes)
                for write in writes {
                    guard let value = write.value, let id = ids[write.entity] else { continue }
                    Self.encoded(value).withUnsafeBytes { accumulator.add(type: write.typeName, entity: id, payload: $0) }
                }
            }
        }
        var replicated = Set<String>()
        for column in columns {
            let type = column.componentType
            if Self.replication(of: type) != .local { replicated.insert(type.typeName) }
        }
        return accumulator.digest(replicated: replicated)
    }

    /// `value`'s payload bytes.
    static func encoded<C: Component>(_ value: C) -> [UInt8] {
        var payload = PayloadWriter()
        value.encode(to: &payload)
        return payload.bytes
    }

    static func replication<C: Component>(of type: C.Type) -> Replication { C.replication }
}

/// What an operation from another device changed in this world, told to the host after
/// Strata applied it (``Engine/onReplicatedChange``): the host redraws, plays a sound,
/// moves a selection; it does not apply anything itself.
public struct ReplicatedChange: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The entity came from another device (with its first replicated value).
        case spawned
        /// The entity was despawned on another device (it is gone here too).
        case despawned
        /// A value of ``ReplicatedChange/typeName`` was set.
        case set
        /// The value of ``ReplicatedChange/typeName`` was removed.
        case removed
    }

    public var kind: Kind
    /// The entity's stable id.
    public var entity: EntityID
    /// The component type's name (``Component/typeName``); nil for a spawn or a despawn.
    public var typeName: String?

    public init(kind: Kind, entity: EntityID, typeName: String? = nil) {
        self.kind = kind
        self.entity = entity
        self.typeName = typeName
    }

    public var description: String { "\(kind) \(typeName ?? "entity") \(entity)" }
}

/// What this device did with the replicated operations it received, since it opened
/// (``Engine/replicationStatus``). Nothing received is ever dropped: an operation is in
/// the log before it is applied, and one that is not applied is either superseded (a
/// newer one of the same value is applied), overruled by a despawn, or held.
public struct ReplicationStatus: Sendable, Equatable {
    /// Applied to the world.
    public var applied = 0
    /// Older than what the entity holds (the last writer won already).
    public var superseded = 0
    /// For an entity despawned on some device (the despawn wins).
    public var afterDespawn = 0
    /// Not applied for now, kept with the entity (``heldNow`` says how many are still held).
    public var held = 0
    /// Whose operation bytes do not parse: kept in the log, reported, never applied.
    public var malformed = 0
    /// Values held since the open, by reason ("unknown type", "newer payload version",
    /// "undecodable", "stamped in the future"); ``held`` is their sum.
    public var heldByReason: [String: Int] = [:]
    /// Values held right now, by reason (the same names).
    public var heldNow: [String: Int] = [:]
    /// Operations this device logged for its own replicated changes.
    public var logged = 0
    /// Values one device wrote that a newer value from another device replaced here (an
    /// edit made here, or one pulled): two devices wrote one value, and the last writer
    /// won. A default (``World/insertDefault(_:for:)``) replaced is not counted.
    public var overwrites = OverwriteCounts()

    public init() {}
}

/// Overwrites of one device's value by another's (``ReplicationStatus/overwrites``), by
/// the gap between the two writes' stamps. Under 250 ms, neither device can have seen the
/// other's value before it wrote its own (a sync's round trip is longer): a true
/// conflict, decided by the stamps. Ten seconds or more apart, one device most likely
/// edited what it had seen.
public struct OverwriteCounts: Sendable, Equatable, Codable, CustomStringConvertible {
    public var total = 0
    public var under250ms = 0
    /// From 250 ms to under 1 s.
    public var under1s = 0
    /// From 1 s to under 10 s.
    public var under10s = 0
    /// 10 s or more.
    public var longer = 0

    public init() {}

    /// Counts `new` replacing `old` if that is an overwrite between devices: a later
    /// stamp of another node over a real one (neither "no stamp" nor a default).
    mutating func note(_ new: OperationStamp, replacing old: OperationStamp) {
        guard new > old, !old.sameNode(as: new), !old.isZero, !old.isDefault, !new.isDefault else { return }
        add(gapMilliseconds: HybridTimestamp(rawValue: new.timestamp).milliseconds &- HybridTimestamp(rawValue: old.timestamp).milliseconds)
    }

    /// Counts an overwrite `gap` milliseconds after the value it replaced.
    private mutating func add(gapMilliseconds gap: Int64) {
        total += 1
        switch gap {
        case ..<250: under250ms += 1
        case ..<1_000: under1s += 1
        case ..<10_000: under10s += 1
        default: longer += 1
        }
    }

    /// "171 (56 under 250 ms apart, 30 under 1 s, 70 under 10 s, 15 longer)", or "none".
    public var description: String {
        total == 0 ? "none" : "\(total) (\(under250ms) under 250 ms apart, \(under1s) under 1 s, \(under10s) under 10 s, \(longer) longer)"
    }
}

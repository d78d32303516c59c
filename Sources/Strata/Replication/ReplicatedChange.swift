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
    /// Values held right now, by reason ("unknown type", "newer payload version",
    /// "undecodable", "stamped in the future").
    public var heldNow: [String: Int] = [:]
    /// Operations this device logged for its own replicated changes.
    public var logged = 0

    public init() {}
}

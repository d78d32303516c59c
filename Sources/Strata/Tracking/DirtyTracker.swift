/// Layer 1 of RFC 0002: which keys changed since their tier was last drained.
///
/// Owned by the tick thread (inside ``World``).
///
/// Invariants:
/// 1. A key is appended to a tier's list only when its column's dirty bit goes from
///    false to true, so each list holds each live dirty key at most once more than
///    the number of despawn-and-reuse cycles of its slot (stale keys are skipped).
/// 2. `firstDirty[tier]` is set exactly when the tier goes from clean to dirty and
///    cleared when the tier is drained: the flush deadline runs from the oldest change.
/// 3. Entity spawns and despawns are critical work: they live in `spawns` and
///    `despawns` and make the critical tier dirty.
/// 4. Marking never allocates once the lists have grown to their steady-state size:
///    drains keep capacity.
struct DirtyTracker {
    /// A spawn waiting for the next critical drain.
    struct Spawn {
        var entity: Entity
        var id: EntityID
    }

    /// Dirty keys per persisted tier (`Tier.critical.rawValue`, `Tier.derived.rawValue`).
    private(set) var keys: [[DirtyKey]] = [[], []]
    /// When each persisted tier first became dirty since its last drain.
    private(set) var firstDirty: [Instant?] = [nil, nil]
    private(set) var spawns: [Spawn] = []
    private(set) var despawns: [EntityID] = []

    @inline(__always)
    mutating func mark(_ key: DirtyKey, tier: Tier, now: () -> Instant) {
        let t = tier.rawValue
        if firstDirty[t] == nil { firstDirty[t] = now() }
        keys[t].append(key)
    }

    mutating func markSpawn(_ entity: Entity, id: EntityID, now: () -> Instant) {
        if firstDirty[0] == nil { firstDirty[0] = now() }
        spawns.append(Spawn(entity: entity, id: id))
    }

    mutating func markDespawn(_ id: EntityID, now: () -> Instant) {
        if firstDirty[0] == nil { firstDirty[0] = now() }
        despawns.append(id)
    }

    /// Number of keys queued for `tier` (an upper bound: stale keys are counted).
    func pendingCount(_ tier: Tier) -> Int {
        guard tier != .ephemeral else { return 0 }
        let entityOps = tier == .critical ? spawns.count + despawns.count : 0
        return keys[tier.rawValue].count + entityOps
    }

    func firstDirty(_ tier: Tier) -> Instant? {
        tier == .ephemeral ? nil : firstDirty[tier.rawValue]
    }

    /// Hands the tier's keys to `body` and clears the tier, keeping the lists' storage.
    mutating func drain(_ tier: Tier, _ body: (_ keys: [DirtyKey], _ spawns: [Spawn], _ despawns: [EntityID]) -> Void) {
        let t = tier.rawValue
        if tier == .critical {
            body(keys[t], spawns, despawns)
            spawns.removeAll(keepingCapacity: true)
            despawns.removeAll(keepingCapacity: true)
        } else {
            body(keys[t], [], [])
        }
        keys[t].removeAll(keepingCapacity: true)
        firstDirty[t] = nil
    }
}

/// The first stage of the write path: which tiers are dirty, since when, and where to look.
///
/// Owned by the tick thread (inside ``World``). The dirty keys themselves live in the
/// component columns (``ComponentColumn``: a dirty bit per entity slot and a list of
/// slots per tier), so that a drain runs type-specialized code column by column.
///
/// Invariants:
/// 1. A column's slot is appended to its tier list only when its dirty bit goes from
///    false to true; stale entries (bit cleared by a despawn or an earlier drain) are
///    skipped at drain time and never cause a wrong write.
/// 2. A column index is in the tier's column list exactly when that column's tier list went
///    from empty to non-empty since the tier was last drained.
/// 3. A tier's first-dirty instant is set when it goes from clean to dirty and cleared when
///    it is drained: flush deadlines run from the oldest pending change.
/// 4. Spawns, despawns, settings and the operation log's work are critical work: they make
///    the critical tier dirty and set `criticalExtras`, which a critical drain reads
///    before it looks at any of them (spawns or despawns queued imply it is set).
/// 5. Marking never allocates once the lists have reached their steady-state size:
///    drains keep capacity.
@usableFromInline
struct DirtyTracker {
    /// A spawn waiting for the next critical drain.
    @usableFromInline
    struct Spawn {
        @usableFromInline var entity: Entity
        @usableFromInline var id: EntityID

        @usableFromInline
        init(entity: Entity, id: EntityID) { self.entity = entity; self.id = id }
    }

    /// Columns with dirty slots, per persisted tier (two arrays, not an array of two: one
    /// cache line fewer to touch on the tick of a critical change and on its flush).
    @usableFromInline var criticalColumns: [UInt32] = []
    @usableFromInline var derivedColumns: [UInt32] = []
    /// When each persisted tier went from clean to dirty. Two fields, not an array: the
    /// end of every tick reads them, and an array's buffer is one more cold cache line.
    @usableFromInline var firstCritical: Instant?
    @usableFromInline var firstDerived: Instant?
    /// A column has queued more replicated changes than a drain should log in one tick
    /// (a level load, an import): the end of the tick logs them ahead of their drain
    /// (``World/logReplicatedChangesAhead()``). Beside the first-dirty instants: every end
    /// of tick reads it.
    @usableFromInline var replicaBacklog = false
    /// Spawns, despawns, settings or operation-log work queued since the last critical
    /// drain. Beside the first-dirty instants, so that a critical flush of component keys
    /// alone does not touch the spawn lists, the settings or the operation log: each is
    /// a cache line of its own, cold by the time of the flush (about 3 µs together).
    @usableFromInline var criticalExtras = false
    @usableFromInline var spawns: [Spawn] = []
    /// Numbers of despawned entities whose rows must go.
    @usableFromInline var despawns: [EntityNumber] = []
    /// Columns of replicated types with changes not yet logged as operations
    /// (`World+Replicate.swift`); a critical drain logs them.
    @usableFromInline var replicaColumns: [UInt32] = []
    /// `replicate_interval_ms − critical_flush_delay_ms` in nanoseconds: a replicated change
    /// makes the critical tier due as if it had happened this much later.
    @usableFromInline var replicateLeadNanoseconds: Int64 = 0
    /// `firstCritical` was set by a replicated change ahead of its time: a critical
    /// change must still bring it back to now.
    @usableFromInline var criticalDeferred = false

    @usableFromInline
    init() {}

    /// Records that column `typeIndex` has its first queued key of `tier`: the only
    /// marking that reaches the tracker (a tier goes dirty only through such a key).
    @inlinable
    mutating func noteColumnDirty(_ tier: Tier, typeIndex: UInt32, clock: any StrataClock) {
        if tier == .critical {
            if firstCritical == nil || criticalDeferred { startCritical(clock: clock) }
            criticalColumns.append(typeIndex)
        } else {
            if firstDerived == nil { firstDerived = clock.now() }
            derivedColumns.append(typeIndex)
        }
    }

    /// The critical tier has work from now: its first dirty instant is now, unless it was
    /// already earlier.
    @inlinable
    mutating func startCritical(clock: any StrataClock) {
        let now = clock.now()
        if let first = firstCritical, first < now { criticalDeferred = false; return }
        firstCritical = now
        criticalDeferred = false
    }

    /// Column `typeIndex` has its first change of a replicated value not yet logged: the
    /// critical tier falls due `replicate_interval_ms` from now (or earlier).
    @usableFromInline
    mutating func noteReplicaDirty(typeIndex: UInt32, clock: any StrataClock) {
        replicaColumns.append(typeIndex)
        let due = Instant(nanoseconds: clock.now().nanoseconds &+ replicateLeadNanoseconds)
        if let first = firstCritical, first <= due { return }
        if firstCritical == nil { criticalDeferred = replicateLeadNanoseconds > 0 }
        firstCritical = due
    }

    mutating func noteSpawn(_ entity: Entity, id: EntityID, clock: any StrataClock) {
        if firstCritical == nil || criticalDeferred { startCritical(clock: clock) }
        criticalExtras = true
        spawns.append(Spawn(entity: entity, id: id))
    }

    /// Critical work that is not a component key (a setting, an operation, a peer's
    /// acknowledgement, a vector-clock row): the tier goes dirty. Called by every path
    /// that queues such work, after queuing it.
    mutating func noteCriticalWork(clock: any StrataClock) {
        if firstCritical == nil || criticalDeferred { startCritical(clock: clock) }
        criticalExtras = true
    }

    mutating func noteDespawn(_ number: EntityNumber, clock: any StrataClock) {
        if firstCritical == nil || criticalDeferred { startCritical(clock: clock) }
        criticalExtras = true
        despawns.append(number)
    }


    @inline(__always)
    func firstDirty(_ tier: Tier) -> Instant? {
        switch tier {
        case .critical: firstCritical
        case .derived: firstDerived
        case .ephemeral: nil
        }
    }

    /// Clears the tier; its dirty columns are swapped into `scratch` (which must be
    /// empty), so no list is copied or allocated.
    mutating func reset(_ tier: Tier, swappingColumnsInto scratch: inout [UInt32]) {
        if tier == .critical { swap(&criticalColumns, &scratch) } else { swap(&derivedColumns, &scratch) }
        if tier == .critical { firstCritical = nil; criticalDeferred = false } else { firstDerived = nil }
        if tier == .critical {
            assert(criticalExtras || (spawns.isEmpty && despawns.isEmpty), "spawns or despawns queued without criticalExtras")
            if criticalExtras {
                if !spawns.isEmpty { spawns.removeAll(keepingCapacity: true) }
                if !despawns.isEmpty { despawns.removeAll(keepingCapacity: true) }
                criticalExtras = false
            }
        }
    }
}

/// The world's replication bookkeeping, beside the entities. Tick thread (inside ``World``).
///
/// The stamps and held values of each entity are its ``ReplicaState`` component; this
/// holds what is not per entity.
struct ReplicaBook {
    /// Ids despawned on some device: edits of them are not applied, and the ids never
    /// come back. Read from the log's `strata.despawn` operations at open.
    var tombstones: Set<EntityID> = []
    var status = ReplicationStatus()
    /// Changes applied since the engine last told the host (``Engine/onReplicatedChange``).
    var changes: [ReplicatedChange] = []
    /// Operations logged for local changes since the engine last counted them.
    var loggedSinceRead = 0
    /// The earliest wall-clock millisecond at which a value held as stamped in the future
    /// may be applied; nil if none is.
    var earliestFuture: Int64?
    /// `max_clock_skew_secs` in milliseconds.
    var maxSkewMilliseconds: Int64 = 300_000
    var wallClock: @Sendable () -> Int64 = { unixMilliseconds() }
    /// Reused by each log of the local changes.
    var keys: [ReplicatedKey] = []
}

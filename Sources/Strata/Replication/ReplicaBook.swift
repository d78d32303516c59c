/// The world's replication bookkeeping, beside the entities. Tick thread (inside ``World``).
///
/// The stamps are in ``stamps``; held values (and stamps of types this build does not
/// know) in each entity's ``ReplicaState`` component.
struct ReplicaBook {
    /// The stamp of every replicated (entity, type).
    var stamps = StampTable()
    /// Ids despawned on some device: edits of them are not applied, and the ids never
    /// come back. Read from the log's `strata.despawn` operations at open.
    var tombstones: Set<EntityID> = []
    var status = ReplicationStatus()
    /// Changes applied since the engine last told the host (``Engine/onReplicatedChange``),
    /// kept only while the host listens.
    var changes: [ReplicatedChange] = []
    var reportsChanges = false
    /// The last type name an operation named, with its column (operations come in runs).
    var lastType: (name: String, index: Int, payloadVersion: Int)?
    /// Values applied since the last critical drain.
    var appliedSinceDrain = 0
    /// Operations logged for local changes since the engine last counted them.
    var loggedSinceRead = 0
    /// The earliest wall-clock millisecond at which a value held as stamped in the future
    /// may be applied; nil if none is.
    var earliestFuture: Int64?
    /// `max_clock_ahead_secs` in milliseconds.
    var maxSkewMilliseconds: Int64 = 300_000
    /// A raw hybrid timestamp no operation above is applied: the wall clock plus the skew,
    /// as last read (it only grows, so a stale one is only too strict, and read again).
    var futureBound: Int64 = .min
    var wallClock: @Sendable () -> Int64 = { unixMilliseconds() }
    /// Reused by each log of the local changes.
    var keys: [ReplicatedKey] = []
    /// Rows of replicated changes logged ahead of the critical drain, which takes them.
    var loggedAhead = LoggedAhead()
    /// Pulled values waiting to be decoded together (``World/applyStaged()``).
    var staged = StagedValues()
    /// Operations held or malformed since the engine last reported them.
    var notices: [ReplicaNotice] = []
    /// The column of ``ReplicaState``, once looked up (every applied value marks it).
    /// Unmanaged: the world's column list keeps it for the world's life (columns are only
    /// added), and a strong reference would be retained and released by every use.
    var stateColumn: Unmanaged<ComponentColumn<ReplicaState>>?
}

/// An operation that was not applied, and why, for the engine to report.
struct ReplicaNotice {
    var node: NodeID
    var seq: Int64
    var outcome: World.ReplicaOutcome
}

/// Rows of replicated changes logged ahead of the critical drain (``World/logReplicatedChangesAhead()``),
/// each with its entity: a row whose entity was despawned since is not written.
struct LoggedAhead {
    var writes: [ComponentWrite] = []
    var entities: [Entity] = []
}

/// This device's changes of replicated components, logged as operations. Tick thread.
///
/// A change of a replicated (entity, type) sets the key's replica bit (``World/markDirty(_:_:)``)
/// and makes the critical tier due within `replicate_interval_ms`. The next critical drain
/// logs one operation per key with its value *then*: however often it changed (a drag
/// of 300 ticks), one operation. The key's row goes into the same batch, and its stamp
/// into the ``StampTable`` (and the entity's stored ``ReplicaState``), so the value, its stamp and its operation commit
/// together, with the critical flush's one sync and no other.
extension World {
    /// A column with this many replicated changes queued is logged ahead of its drain:
    /// about a millisecond of the tick's time (a spawn logs ~1 µs per replicated type).
    @usableFromInline static let replicatedBacklog = 2048

    /// Logs the replicated keys changed since the last critical drain (called by it,
    /// before the operations are drained), after the ones logged ahead of it.
    func logReplicatedChanges(into batch: WriteBatch) {
        tracker.replicaBacklog = false
        if !replicas.loggedAhead.writes.isEmpty { takeLoggedAhead(into: batch) }
        guard !tracker.replicaColumns.isEmpty else { return }
        var unkept: [Entity] = []
        let logged = logQueuedChanges(into: &batch.writes, entities: &unkept, keepingEntities: false)
        if logged > 0 { noteLogged(logged) }
    }

    /// Logs the queued replicated keys now, with their values now, their rows kept for
    /// the next critical drain (``logReplicatedChanges(into:)``). Called at the end of a
    /// tick when a column's queue is long (``DirtyTracker/replicaBacklog``): a world that
    /// grows by a million shapes logs a tick's share each tick rather than a second's
    /// worth in the critical drain's one tick. A key changed again before the drain is
    /// logged again (its later row follows the earlier in the batch), where a drain would
    /// have logged it once; that is the price of a backlog only.
    func logReplicatedChangesAhead() {
        owner.check("World")
        tracker.replicaBacklog = false
        guard !tracker.replicaColumns.isEmpty else { return }
        // The stamps' rows mark the critical tier dirty now; their changes made it due
        // earlier or later (`replicate_interval_ms`), and that instant stays.
        let due = (tracker.firstCritical, tracker.criticalDeferred)
        defer { (tracker.firstCritical, tracker.criticalDeferred) = due }
        var ahead = LoggedAhead()
        swap(&ahead, &replicas.loggedAhead)
        let logged = logQueuedChanges(into: &ahead.writes, entities: &ahead.entities, keepingEntities: true)
        swap(&ahead, &replicas.loggedAhead)
        // Counted, and drained by the critical drain already due for these changes: its
        // due instant stays the one their first change gave it.
        replicas.status.logged += logged
        replicas.loggedSinceRead += logged
        if logged > 0 { tracker.criticalExtras = true }
    }

    /// The rows logged ahead, into the drain's batch: those of entities still alive (a
    /// despawn since has its own operation, and its rows go).
    private func takeLoggedAhead(into batch: WriteBatch) {
        var ahead = LoggedAhead()
        swap(&ahead, &replicas.loggedAhead)
        // A key changed again since, or given a peer's value, is written again by this drain.
        batch.writesMayRepeatKeys = true
        batch.writes.reserveCapacity(batch.writes.count + ahead.writes.count)
        for (write, entity) in zip(ahead.writes, ahead.entities) {
            let record = records[Int(entity.index)]
            if record.alive, record.generation == entity.generation { batch.writes.append(write) }
        }
        ahead.writes.removeAll(keepingCapacity: true)
        ahead.entities.removeAll(keepingCapacity: true)
        swap(&ahead, &replicas.loggedAhead)
    }

    /// One operation per queued key with its value now; its row (if the key is to be
    /// persisted) into `writes`, and its entity into `entities` when `keepingEntities`.
    /// Returns how many.
    private func logQueuedChanges(into writes: inout [ComponentWrite], entities: inout [Entity], keepingEntities: Bool) -> Int {
        var typeIndices: [UInt32] = []
        swap(&typeIndices, &tracker.replicaColumns)
        var logged = 0
        for typeIndex in typeIndices {
            let column = columns[Int(typeIndex)]
            let type = column.componentType
            replicas.keys.removeAll(keepingCapacity: true)
            column.takeReplicated(into: &replicas.keys)
            for key in replicas.keys {
                let record = records[Int(key.entityIndex)]
                guard record.alive else { continue }
                let payload = key.value.map { Self.encoded($0)[...] }
                let operation = operationLog.append(
                    kind: ReplicatedOperation.componentKind,
                    payload: ReplicatedOperation.component(entity: record.id, type: type.typeName, version: type.payloadVersion,
                                                           payload: payload).encoded())
                let entity = Entity(index: key.entityIndex, generation: record.generation)
                if key.persist {
                    writes.append(ComponentWrite(entity: record.number, typeIndex: typeIndex, typeName: type.typeName, value: key.value))
                    if keepingEntities { entities.append(entity) }
                }
                setStamp(OperationStamp(operation), typeIndex: Int(typeIndex), type: type.typeName, of: entity)
                logged += 1
            }
        }
        typeIndices.removeAll(keepingCapacity: true)
        swap(&typeIndices, &tracker.replicaColumns)
        return logged
    }

    /// Counts `count` operations logged here for replicated changes; the critical tier
    /// drains them.
    func noteLogged(_ count: Int) {
        replicas.status.logged += count
        replicas.loggedSinceRead += count
        tracker.noteCriticalWork(clock: clock)
    }

    /// Logs the despawn of a replicated entity (``isReplicated(_:)``: an operation was
    /// logged or applied for it) and keeps its tombstone.
    func logDespawn(of id: EntityID) {
        _ = operationLog.append(kind: ReplicatedOperation.despawnKind, payload: ReplicatedOperation.despawn(entity: id).encoded())
        replicas.tombstones.insert(id)
        noteLogged(1)
    }

    /// Marks every replicated value that has no stamp for its type to be logged (at open):
    /// values of a document made before its type replicated. Returns how many.
    func adoptUnstampedReplicatedValues() -> Int {
        var adopted = 0
        for column in columns where Self.replication(of: column.componentType) != .local && column.componentType.tier != .ephemeral {
            // The table is asked once per column: a read of it through the world per entity
            // cost a retain and a release each (0.13 s of a million-shape open).
            for entityIndex in replicas.stamps.unstamped(Int(column.typeIndex), among: column.entityIndices) {
                if column.markReplicaDirty(entityIndex) == 1 { tracker.noteReplicaDirty(typeIndex: column.typeIndex, clock: clock) }
                adopted += 1
            }
        }
        return adopted
    }

    /// Operations logged for local changes since the last call (for the vector-clock trigger).
    func takeReplicatedLogCount() -> Int {
        defer { replicas.loggedSinceRead = 0 }
        return replicas.loggedSinceRead
    }
}

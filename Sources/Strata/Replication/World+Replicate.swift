/// This device's changes of replicated components, logged as operations. Tick thread.
///
/// A change of a replicated (entity, type) sets the key's replica bit (``World/markDirty(_:_:)``)
/// and makes the critical tier due within `replicate_interval_ms`. The next critical drain
/// logs one operation per key with its value *then*: however often it changed (a drag
/// of 300 ticks), one operation. The key's row goes into the same batch, and its stamp
/// into the ``StampTable`` (and the entity's stored ``ReplicaState``), so the value, its stamp and its operation commit
/// together, with the critical flush's one sync and no other.
extension World {
    /// Logs the replicated keys changed since the last critical drain (called by it,
    /// before the operations are drained).
    func logReplicatedChanges(into batch: WriteBatch) {
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
                if key.persist {
                    batch.writes.append(ComponentWrite(entity: record.number, typeIndex: typeIndex, typeName: type.typeName, value: key.value))
                }
                setStamp(OperationStamp(operation), typeIndex: Int(typeIndex), type: type.typeName,
                         of: Entity(index: key.entityIndex, generation: record.generation))
                logged += 1
            }
        }
        typeIndices.removeAll(keepingCapacity: true)
        swap(&typeIndices, &tracker.replicaColumns)
        if logged > 0 { noteLogged(logged) }
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
            for entityIndex in column.entityIndices {
                guard replicas.stamps.stamp(Int(column.typeIndex), entityIndex).isZero else { continue }
                if column.markReplicaDirty(entityIndex) { tracker.noteReplicaDirty(typeIndex: column.typeIndex, clock: clock) }
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

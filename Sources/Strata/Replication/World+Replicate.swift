/// This device's changes of replicated components, logged as operations. Tick thread.
///
/// A change of a replicated (entity, type) sets the key's replica bit (``World/markDirty(_:_:)``)
/// and makes the critical tier due within `replicate_interval_ms`. The next critical drain
/// logs one operation per key with its value *then*: however often it changed (a drag
/// of 300 ticks), one operation. The key's row goes into the same batch, and its stamp
/// into the entity's ``ReplicaState``, so the value, its stamp and its operation commit
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
                let stamp = OperationStamp(operation)
                updateState(of: Entity(index: key.entityIndex, generation: record.generation)) { $0.applied(type.typeName, stamp: stamp) }
                logged += 1
            }
        }
        typeIndices.removeAll(keepingCapacity: true)
        swap(&typeIndices, &tracker.replicaColumns)
        if logged > 0 {
            replicas.status.logged += logged
            replicas.loggedSinceRead += logged
            tracker.noteCriticalWork(clock: clock)
        }
    }

    /// Logs the despawn of a replicated entity (an entity with a ``ReplicaState``: an
    /// operation was logged or applied for it) and keeps its tombstone.
    func logDespawn(of id: EntityID) {
        _ = operationLog.append(kind: ReplicatedOperation.despawnKind, payload: ReplicatedOperation.despawn(entity: id).encoded())
        replicas.tombstones.insert(id)
        replicas.status.logged += 1
        replicas.loggedSinceRead += 1
        tracker.noteCriticalWork(clock: clock)
    }

    /// Marks every replicated value that has no stamp for its type to be logged (at open):
    /// values of a document made before its type replicated. Returns how many.
    func adoptUnstampedReplicatedValues() -> Int {
        var adopted = 0
        for column in columns where Self.replication(of: column.componentType) != .local && column.componentType.tier != .ephemeral {
            for entityIndex in column.entityIndices {
                let record = records[Int(entityIndex)]
                let entity = Entity(index: entityIndex, generation: record.generation)
                guard get(ReplicaState.self, for: entity)?.stamp(of: column.componentType.typeName) == nil else { continue }
                if column.markReplicaDirty(entityIndex) { tracker.noteReplicaDirty(typeIndex: column.typeIndex, clock: clock) }
                adopted += 1
            }
        }
        return adopted
    }

    /// Changes the entity's ``ReplicaState`` in place (no copy of its lists), or gives it one.
    func updateState(of entity: Entity, _ body: (inout ReplicaState) -> Void) {
        withStateColumn { column in
            if let d = column.denseIndex(entity.index) {
                body(&column.values[d])
            } else {
                var state = ReplicaState()
                body(&state)
                column.set(state, at: entity.index)
            }
            markDirty(column, entity.index)
        }
    }

    /// The stamp an operation on `type` of `entity` must beat (``ReplicaState/kept(_:)``;
    /// `releasing` a held value: the applied stamp only), read in place.
    func keptStamp(of entity: Entity, _ type: String, releasing: Bool) -> OperationStamp {
        withStateColumn { column in
            guard let d = column.denseIndex(entity.index) else { return .zero }
            return column.values.withUnsafeBufferPointer { states in
                releasing ? (states[d].stamp(of: type) ?? .zero) : states[d].kept(type)
            }
        }
    }

    /// Runs `body` with the column of ``ReplicaState``s (looked up once: every applied
    /// value writes it), borrowed: neither retained nor released.
    @inline(__always)
    func withStateColumn<R>(_ body: (ComponentColumn<ReplicaState>) -> R) -> R {
        if replicas.stateColumn == nil { replicas.stateColumn = Unmanaged.passUnretained(column(ReplicaState.self)) }
        return replicas.stateColumn!._withUnsafeGuaranteedRef(body)
    }

    /// Operations logged for local changes since the last call (for the vector-clock trigger).
    func takeReplicatedLogCount() -> Int {
        defer { replicas.loggedSinceRead = 0 }
        return replicas.loggedSinceRead
    }
}

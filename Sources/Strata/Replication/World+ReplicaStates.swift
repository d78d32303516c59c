/// Stamps and held values, and their stored form. Tick thread.
///
/// The stamp of a replicated (entity, type) is kept in the ``StampTable``; what has no
/// replicated column (held values, and the stamps of types this build does not know) in
/// the entity's ``ReplicaState`` component. Stored, an entity has one `strata.replica`
/// row with all of it: a change of any of it marks the entity's state dirty (critical),
/// and the drain writes the whole state, built then (``drainReplicaStates(records:into:)``),
/// in the same commit as the values and operations that changed it. At open the loaded
/// states are split again (``adoptLoadedReplicaStates()``).
extension World {
    /// Whether the entity takes part in replication: an operation was logged or applied
    /// for it (it has a stamp), or it holds a value from a peer.
    func isReplicated(_ entity: Entity) -> Bool {
        replicas.stamps.hasAny(entity.index) || has(ReplicaState.self, entity)
    }

    /// The replicated column `type` names, if this build has one (looked up once a run:
    /// operations come in runs of one type).
    func replicatedColumn(named type: String) -> Int? {
        if let last = replicas.lastType, last.name == type { return last.index }
        guard let found = columnByName[type], replicas.stamps.keeps(found) else { return nil }
        replicas.lastType = (type, found, columns[found].componentType.payloadVersion)
        return found
    }

    /// `type`'s value of `entity` (column `typeIndex`) now has `stamp`, logged here or
    /// applied from a peer; a value held for the type with an older stamp is superseded
    /// (one stamped later, held as too far ahead, still waits: it wins when it is due).
    func setStamp(_ stamp: OperationStamp, typeIndex: Int, type: String, of entity: Entity) {
        // Another device's value replaced (by one pulled, or an edit made here) is counted.
        replicas.status.overwrites.note(stamp, replacing: replicas.stamps.stamp(typeIndex, entity.index))
        replicas.stamps.set(typeIndex, entity.index, stamp)
        withStateColumn { column in
            if let d = column.denseIndex(entity.index), let held = column.values[d].heldValue(of: type), held.stamp <= stamp {
                column.values[d].hold(type, nil)
                if column.values[d].isEmpty { column.remove(at: entity.index) }
            }
            markDirty(column, entity.index)
        }
    }

    /// Merges a stored state that was parked (a row refused for good, replayed) into the
    /// entity's, and marks it to be written again: a stamp only moves forward, and a held
    /// value comes back unless something newer was applied or held for its type since.
    func mergeParkedReplicaState(_ parked: ReplicaState, of entity: Entity) {
        for entry in parked.stamps where entry.stamp > keptStamp(of: entity, entry.type, releasing: true) {
            if let typeIndex = replicatedColumn(named: entry.type) {
                replicas.stamps.set(typeIndex, entity.index, entry.stamp)
            } else {
                updateState(of: entity) { ReplicaState.set(&$0.stamps, entry.type, entry.stamp) }
            }
        }
        for entry in parked.held where entry.value.stamp > keptStamp(of: entity, entry.type, releasing: false) {
            updateState(of: entity) { $0.hold(entry.type, entry.value) }
            if entry.value.reason == .future { noteFuture(entry.value.stamp) }
        }
        withStateColumn { markDirty($0, entity.index) }
    }

    /// Changes the entity's ``ReplicaState`` (its held values) in place, or gives it one;
    /// one left empty goes.
    func updateState(of entity: Entity, _ body: (inout ReplicaState) -> Void) {
        withStateColumn { column in
            if let d = column.denseIndex(entity.index) {
                body(&column.values[d])
                if column.values[d].isEmpty { column.remove(at: entity.index) }
            } else {
                var state = ReplicaState()
                body(&state)
                if !state.isEmpty { column.set(state, at: entity.index) }
            }
            markDirty(column, entity.index)
        }
    }

    /// The stamp an operation on `type` of `entity` must beat: the applied one, or a
    /// held one above it (`releasing` a held value: the applied one only).
    func keptStamp(of entity: Entity, _ type: String, releasing: Bool) -> OperationStamp {
        let column = replicatedColumn(named: type)
        let applied = column.map { typeIndex in withStamps { $0.stamp(typeIndex, entity.index) } } ?? .zero
        return withStateColumn { states in
            guard let d = states.denseIndex(entity.index) else { return applied }
            return states.values.withUnsafeBufferPointer { states in
                let stored = column == nil ? (states[d].stamp(of: type) ?? .zero) : applied
                return releasing ? stored : max(stored, states[d].heldValue(of: type)?.stamp ?? .zero)
            }
        }
    }

    /// The entity's whole state, as stored: its stamps in type-name order and its held values.
    func replicaState(at slot: UInt32) -> ReplicaState {
        var state = ReplicaState()
        state.stamps = replicas.stamps.stamps(of: slot)
        withStateColumn { column in
            guard let d = column.denseIndex(slot) else { return }
            for entry in column.values[d].stamps { ReplicaState.set(&state.stamps, entry.type, entry.stamp) }
            state.held = column.values[d].held
        }
        return state
    }

    /// The critical drain of the states: one write per dirty entity, its whole state
    /// (none: the row goes), a ``StoredReplicaState`` unless it holds values. Called by
    /// ``drain(_:into:at:withClock:)`` for the state column.
    func drainReplicaStates(records: UnsafeBufferPointer<EntityRecord>, into writes: inout [ComponentWrite]) {
        withStateColumn { column in
            var queued: [UInt32] = []
            swap(&queued, &column.queuedCritical)
            writes.reserve(atLeast: queued.count)
            let run = StampRun()
            let table = replicas.stamps   // one copy for the loop (its arrays retained once, not per entity)
            var stamps: [ReplicaState.Stamped] = []
            stamps.reserveCapacity(queued.count * table.order.count)
            for slot in queued where column.slots[Int(slot)].dirty {
                column.slots[Int(slot)].dirty = false
                let number = records[Int(slot)].number
                if column.denseIndex(slot) != nil {   // something held, or a type without a column: the whole state
                    writes.append(ComponentWrite(entity: number, typeIndex: column.typeIndex, typeName: column.typeName,
                                                 value: replicaState(at: slot)))
                    continue
                }
                let start = stamps.count
                table.append(stampsOf: slot, to: &stamps)
                if stamps.count > start {
                    writes.append(ComponentWrite(entity: number, typeIndex: column.typeIndex, typeName: column.typeName,
                                                 value: StoredReplicaState(run: run, start: start, count: stamps.count - start)))
                } else {
                    writes.append(ComponentWrite(entity: number, typeIndex: column.typeIndex, typeName: column.typeName, value: nil))
                }
            }
            run.stamps = stamps   // before the batch leaves this thread
            queued.removeAll(keepingCapacity: true)
            swap(&queued, &column.queuedCritical)
        }
    }

    /// Every replicated entity's whole state, as writes (``snapshotComponents(into:)``).
    func snapshotReplicaStates(records: UnsafeBufferPointer<EntityRecord>, into writes: inout [ComponentWrite]) {
        withStateColumn { column in
            for slot in records.indices where records[slot].alive {
                guard replicas.stamps.hasAny(UInt32(slot)) || column.denseIndex(UInt32(slot)) != nil else { continue }
                writes.append(ComponentWrite(entity: records[slot].number, typeIndex: column.typeIndex,
                                             typeName: column.typeName, value: replicaState(at: UInt32(slot))))
            }
        }
    }

    /// Splits the states a load put into the state column: the stamps of replicated
    /// columns go into the ``StampTable``; what stays is what has no column. Marks nothing
    /// dirty: the stored rows are what the next drain would write.
    func adoptLoadedReplicaStates() {
        guard columnByType[ObjectIdentifier(ReplicaState.self)] != nil else { return }   // a world that never replicated
        withStateColumn { column in
            var emptied: [UInt32] = []
            for d in column.values.indices where !column.values[d].stamps.isEmpty {
                let slot = column.owners[d]
                var kept: [ReplicaState.Stamped] = []
                for entry in column.values[d].stamps {
                    if let typeIndex = replicatedColumn(named: entry.type) {
                        replicas.stamps.set(typeIndex, slot, entry.stamp)
                    } else {
                        kept.append(entry)
                    }
                }
                column.values[d].stamps = kept
                if column.values[d].isEmpty { emptied.append(slot) }
            }
            for slot in emptied { column.remove(at: slot) }
        }
    }

    /// Runs `body` with the stamp table in place. A non-mutating call on `replicas.stamps`
    /// copies the table out of the world (a class) first, retaining and releasing its two
    /// arrays: this is for the reads of every pulled value.
    @inline(__always)
    func withStamps<R>(_ body: (inout StampTable) -> R) -> R {
        body(&replicas.stamps)
    }

    /// Runs `body` with the column of ``ReplicaState``s (looked up once), borrowed:
    /// neither retained nor released.
    @inline(__always)
    func withStateColumn<R>(_ body: (ComponentColumn<ReplicaState>) -> R) -> R {
        let stateColumn = replicas.stateColumn ?? Unmanaged.passUnretained(column(ReplicaState.self))
        replicas.stateColumn = stateColumn
        return stateColumn._withUnsafeGuaranteedRef(body)
    }
}

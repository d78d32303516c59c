/// Other devices' replicated operations, applied to the world. Tick thread.
///
/// An operation on a value (entity, type) is applied only if its stamp (hybrid
/// timestamp, then node id) is above the one the entity keeps for that type, so every
/// device ends with the value of the highest stamp whatever order the operations came
/// in. The value is queued critical and the new stamp written into the entity's
/// ``ReplicaState``: both commit with the operation's own row. A despawn wins over every
/// edit, and its id never comes back. What cannot be applied now is held with the entity
/// (``HeldValue``), byte for byte, and tried again when it can be.
extension World {
    /// What became of one operation.
    enum ReplicaOutcome: Equatable {
        case applied, superseded, afterDespawn, held(HeldValue.Reason), malformed(String)
    }

    /// Applies `operation`, one of Strata's replicated kinds, logged already.
    func applyReplicated(_ operation: LoggedOperation) -> ReplicaOutcome {
        let decoded: ReplicatedOperation
        do {
            decoded = try ReplicatedOperation(kind: operation.kind, payload: operation.payload)
        } catch {
            return count(.malformed("\(error)"))
        }
        switch decoded {
        case .despawn(let id):
            return count(applyDespawn(of: id))
        case let .component(id, type, version, payload):
            let value = HeldValue(stamp: OperationStamp(operation), version: version, payload: nil, reason: .unknownType)
            return count(applyValue(of: type, to: id, value, payload: payload, releasing: false))
        }
    }

    private func count(_ outcome: ReplicaOutcome) -> ReplicaOutcome {
        switch outcome {
        case .applied:
            replicas.status.applied += 1
            replicas.appliedSinceDrain += 1
        case .superseded: replicas.status.superseded += 1
        case .afterDespawn: replicas.status.afterDespawn += 1
        case .held: replicas.status.held += 1
        case .malformed: replicas.status.malformed += 1
        }
        return outcome
    }

    private func applyDespawn(of id: EntityID) -> ReplicaOutcome {
        guard replicas.tombstones.insert(id).inserted else { return .superseded }
        if let entity = entity(for: id), despawn(entity, replicating: false) {
            report(ReplicatedChange(kind: .despawned, entity: id))
            return .applied
        }
        return .afterDespawn
    }

    /// Applies `value` to `type` of entity `id` if it beats the kept stamp (when
    /// `releasing` a held value, the applied stamp only: the held one is this value).
    /// `payload`: the value's bytes (nil: a removal), borrowed from the operation.
    private func applyValue(of type: String, to id: EntityID, _ value: HeldValue, payload: ArraySlice<UInt8>?,
                            releasing: Bool) -> ReplicaOutcome {
        if replicas.tombstones.contains(id) { return .afterDespawn }
        var spawned = false
        let entity: Entity
        if let known = self.entity(for: id) {
            entity = known
        } else {
            entity = spawnUnchecked(id: id)
            spawned = true
        }
        let kept = Self.kept(get(ReplicaState.self, for: entity), type, releasing: releasing)
        guard value.stamp > kept else {
            if releasing { updateState(of: entity) { $0.hold(type, nil) } }
            return .superseded
        }
        func hold(_ reason: HeldValue.Reason) -> ReplicaOutcome {
            var held = value
            held.reason = reason
            held.payload = payload.map(Array.init)
            // Held again as it was (tried at open, still unknown): nothing to write.
            if get(ReplicaState.self, for: entity)?.heldValue(of: type) != held {
                updateState(of: entity) { $0.hold(type, held) }
            }
            if spawned { report(ReplicatedChange(kind: .spawned, entity: id)) }
            if reason == .future { noteFuture(value.stamp) }
            return .held(reason)
        }
        let index: Int
        switch columnIndex(for: type, value) {
        case .failure(let reason): return hold(reason)
        case .success(let found): index = found
        }
        let column = columns[index]
        if column.isReplicaDirty(entity.index) {
            // Changed here since the last operations were logged: that change will be
            // logged with a later stamp (the clock has seen this one), and wins.
            updateState(of: entity) { $0.applied(type, stamp: value.stamp) }
            return .superseded
        }
        if let payload {
            do {
                try payload.withUnsafeBytes { raw in
                    var reader = PayloadReader(raw)
                    try column.load(from: &reader, version: value.version, at: entity.index)
                }
            } catch {
                return hold(.undecodable)
            }
        } else {
            _ = column.removeValue(at: entity.index)
        }
        if column.componentType.tier != .ephemeral, column.queueCritical(entity.index) {
            tracker.noteColumnDirty(.critical, typeIndex: column.typeIndex, clock: clock)
        }
        updateState(of: entity) { $0.applied(type, stamp: value.stamp) }
        if spawned { report(ReplicatedChange(kind: .spawned, entity: id)) }
        report(ReplicatedChange(kind: payload == nil ? .removed : .set, entity: id, typeName: type))
        return .applied
    }

    private static func kept(_ state: ReplicaState?, _ type: String, releasing: Bool) -> OperationStamp {
        guard let state else { return .zero }
        return releasing ? (state.stamp(of: type) ?? .zero) : state.kept(type)
    }

    /// Keeps `change` for the host, if it listens.
    private func report(_ change: @autoclosure () -> ReplicatedChange) {
        if replicas.reportsChanges { replicas.changes.append(change()) }
    }

    /// The column `value` applies to, or why it cannot be applied now.
    private func columnIndex(for type: String, _ value: HeldValue) -> Result<Int, HeldValue.Reason> {
        if value.stamp.timestamp > replicas.futureBound {   // the bound only grows: read the clock only past it
            replicas.futureBound = HybridTimestamp(milliseconds: replicas.wallClock() &+ replicas.maxSkewMilliseconds, counter: 0xFFFF).rawValue
            if value.stamp.timestamp > replicas.futureBound { return .failure(.future) }
        }
        let index: Int
        if let last = replicas.lastType, last.name == type {
            index = last.index
        } else {
            // A type this build declares local is not another device's to set (nor Strata's own).
            guard let found = columnByName[type], Self.replication(of: columns[found].componentType) != .local else {
                return .failure(.unknownType)
            }
            replicas.lastType = (type, found)
            index = found
        }
        if value.version > columns[index].componentType.payloadVersion { return .failure(.newerVersion) }
        return .success(index)
    }

    private func noteFuture(_ stamp: OperationStamp) {
        let due = HybridTimestamp(rawValue: stamp.timestamp).milliseconds &- replicas.maxSkewMilliseconds
        replicas.earliestFuture = min(replicas.earliestFuture ?? .max, due)
    }

    /// Tries every held value again (at open: a build that knows more; and when a value
    /// held as stamped in the future is due). Returns the outcomes, in entity order.
    func releaseHeld() -> [ReplicaOutcome] {
        replicas.earliestFuture = nil
        var waiting: [(id: EntityID, type: String, value: HeldValue)] = []
        forEach(ReplicaState.self) { entity, state in
            guard let id = id(of: entity) else { return }
            for (type, value) in state.held { waiting.append((id, type, value)) }
        }
        var outcomes: [ReplicaOutcome] = []
        for (id, type, value) in waiting {
            let outcome = applyValue(of: type, to: id, value, payload: value.payload.map { $0[...] }, releasing: true)
            if outcome == .applied { replicas.status.applied += 1 }
            outcomes.append(outcome)
        }
        return outcomes
    }

    /// Values held right now, by reason.
    func heldCounts() -> [String: Int] {
        var counts: [String: Int] = [:]
        forEach(ReplicaState.self) { _, state in
            for (_, value) in state.held { counts[value.reason.description, default: 0] += 1 }
        }
        return counts
    }
}

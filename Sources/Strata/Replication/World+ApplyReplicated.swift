/// Other devices' replicated operations, applied to the world. Tick thread.
///
/// An operation on a value (entity, type) is applied only if its stamp (hybrid
/// timestamp, then node id) is above the one the entity keeps for that type, so every
/// device ends with the value of the highest stamp whatever order the operations came
/// in. The value is queued critical and its new stamp kept (``StampTable``, stored in the
/// entity's ``ReplicaState``): both commit with the operation's own row. A despawn wins over every
/// edit, and its id never comes back. What cannot be applied now is held with the entity
/// (``HeldValue``), byte for byte, and tried again when it can be.
extension World {
    /// What became of one operation.
    enum ReplicaOutcome: Equatable {
        case applied, superseded, afterDespawn, held(HeldValue.Reason), malformed(String)
    }

    /// Applies `operation`, one of Strata's replicated kinds, logged already. A value to
    /// decode may be staged (``StagedValues``) and its outcome decided by
    /// ``applyStaged()``, which the caller runs before the world is read; what is not
    /// applied is noted in ``ReplicaBook/notices`` for the engine to report.
    func applyReplicated(_ operation: borrowing LoggedOperation) {
        operation.payload.withUnsafeBytes { payload in
            let edit: ReplicatedEdit
            do {
                edit = try ReplicatedEdit.parse(kind: operation.kind, payload: payload, knownType: replicas.lastType?.name)
            } catch {
                note(.malformed("\(error)"), of: operation.node, operation.seq)
                return
            }
            switch consume edit {
            case .despawn(let id):
                applyStaged()
                note(applyDespawn(of: id), of: operation.node, operation.seq)
            case let .component(id, type, version, range, isDefault):
                let stamp = isDefault ? .ofDefault(node: operation.node) : OperationStamp(timestamp: operation.timestamp, node: operation.node)
                let value = HeldValue(stamp: stamp, version: version, payload: nil, reason: .unknownType)
                if let outcome = applyValue(of: type, to: id, value, payload: range.map { UnsafeRawBufferPointer(rebasing: payload[$0]) },
                                            releasing: false, staging: (operation.node, operation.seq)) {
                    note(outcome, of: operation.node, operation.seq)
                }
            }
        }
    }

    @discardableResult
    private func count(_ outcome: ReplicaOutcome) -> ReplicaOutcome {
        switch outcome {
        case .applied:
            replicas.status.applied += 1
            replicas.appliedSinceDrain += 1
        case .superseded: replicas.status.superseded += 1
        case .afterDespawn: replicas.status.afterDespawn += 1
        case .held(let reason):
            replicas.status.held += 1
            replicas.status.heldByReason[reason.description, default: 0] += 1
        case .malformed: replicas.status.malformed += 1
        }
        return outcome
    }

    /// Counts `outcome`, and keeps it for the engine to report unless it is routine.
    func note(_ outcome: ReplicaOutcome, of node: NodeID, _ seq: Int64) {
        switch count(outcome) {
        case .held, .malformed: replicas.notices.append(ReplicaNotice(node: node, seq: seq, outcome: outcome))
        default: break
        }
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
    /// `payload`: the value's bytes (nil: a removal), borrowed from the operation (or the held value).
    /// With `staging` (the operation's node and sequence), a value to decode is staged
    /// and nil returned: ``applyStaged()`` decides it.
    private func applyValue(of type: String, to id: EntityID, _ value: HeldValue, payload: UnsafeRawBufferPointer?,
                            releasing: Bool, staging source: (NodeID, Int64)? = nil) -> ReplicaOutcome? {
        if !replicas.tombstones.isEmpty && replicas.tombstones.contains(id) { return .afterDespawn }
        let (entity, spawned) = entityOrSpawn(id: id)
        if !spawned && replicas.staged.contains(entity) { applyStaged() }   // its state must be current
        let kept = keptStamp(of: entity, type, releasing: releasing)
        guard value.stamp > kept else {
            if releasing { updateState(of: entity) { $0.hold(type, nil) } }
            return .superseded
        }
        let index: Int
        switch columnIndex(for: type, value) {
        case .failure(let reason):
            return hold(value, payload: payload, reason, of: type, entity: entity, id: id, spawned: spawned)
        case .success(let found): index = found
        }
        let column = columns[index]
        if column.isReplicaDirty(entity.index) {
            // Changed here since the last operations were logged: that change will be
            // logged with a later stamp (the clock has seen this one), and wins.
            setStamp(value.stamp, typeIndex: index, type: type, of: entity)
            return .superseded
        }
        if let payload {
            if let source {
                if !replicas.staged.isEmpty && replicas.staged.column != index { applyStaged() }
                replicas.staged.add(payload, column: index, entity: entity, id: id, type: type, value: value, spawned: spawned, source: source)
                return nil
            }
            do {
                var reader = PayloadReader(payload)
                try column.load(from: &reader, version: value.version, at: entity.index)
            } catch {
                return hold(value, payload: payload, .undecodable, of: type, entity: entity, id: id, spawned: spawned)
            }
        } else {
            _ = column.removeValue(at: entity.index)
        }
        applied(value.stamp, of: type, column: column, entity: entity, id: id, spawned: spawned, removed: payload == nil)
        return .applied
    }

    /// What follows a value's decoding: queued critical (unless `queued` already) with its
    /// new stamp, and the host told.
    func applied(_ stamp: OperationStamp, of type: String, column: AnyComponentColumn, entity: Entity, id: EntityID,
                 spawned: Bool, removed: Bool, queued: Bool = false) {
        if !queued, column.componentType.tier != .ephemeral, column.queueCritical(entity.index) {
            tracker.noteColumnDirty(.critical, typeIndex: column.typeIndex, clock: clock)
        }
        setStamp(stamp, typeIndex: Int(column.typeIndex), type: type, of: entity)
        if spawned { report(ReplicatedChange(kind: .spawned, entity: id)) }
        report(ReplicatedChange(kind: removed ? .removed : .set, entity: id, typeName: type))
    }

    /// Holds `value` with the entity, byte for byte, with why.
    func hold(_ value: HeldValue, payload: UnsafeRawBufferPointer?, _ reason: HeldValue.Reason, of type: String,
              entity: Entity, id: EntityID, spawned: Bool) -> ReplicaOutcome {
        var held = value
        held.reason = reason
        held.payload = payload.map { Array($0) }
        // Held again as it was (tried at open, still unknown): nothing to write.
        if get(ReplicaState.self, for: entity)?.heldValue(of: type) != held {
            updateState(of: entity) { $0.hold(type, held) }
        }
        if spawned { report(ReplicatedChange(kind: .spawned, entity: id)) }
        if reason == .future { noteFuture(value.stamp) }
        return .held(reason)
    }

    /// Keeps `change` for the host, if it listens.
    func report(_ change: @autoclosure () -> ReplicatedChange) {
        if replicas.reportsChanges { replicas.changes.append(change()) }
    }

    /// The column `value` applies to, or why it cannot be applied now.
    private func columnIndex(for type: String, _ value: HeldValue) -> Result<Int, HeldValue.Reason> {
        if value.stamp.timestamp > replicas.futureBound {   // the bound only grows: read the clock only past it
            replicas.futureBound = HybridTimestamp(milliseconds: replicas.wallClock() &+ replicas.maxSkewMilliseconds, counter: 0xFFFF).rawValue
            if value.stamp.timestamp > replicas.futureBound { return .failure(.future) }
        }
        // A type this build declares local is not another device's to set (nor Strata's own).
        // The lookup leaves the column's payload version in `lastType`.
        guard let index = replicatedColumn(named: type), let found = replicas.lastType else { return .failure(.unknownType) }
        if value.version > found.payloadVersion { return .failure(.newerVersion) }
        return .success(index)
    }

    func noteFuture(_ stamp: OperationStamp) {
        let due = HybridTimestamp(rawValue: stamp.timestamp).milliseconds &- replicas.maxSkewMilliseconds
        replicas.earliestFuture = min(replicas.earliestFuture ?? .max, due)
    }

    /// Tries every held value again (at open: a build that knows more; and when a value
    /// held as stamped in the future is due). Returns the outcomes, in entity order.
    func releaseHeld() -> [ReplicaOutcome] {
        applyStaged()
        replicas.earliestFuture = nil
        var waiting: [(id: EntityID, type: String, value: HeldValue)] = []
        forEach(ReplicaState.self) { entity, state in
            guard let id = id(of: entity) else { return }
            for entry in state.held { waiting.append((id, entry.type, entry.value)) }
        }
        var outcomes: [ReplicaOutcome] = []
        for (id, type, value) in waiting {
            // Not staged: never nil.
            let outcome = if let bytes = value.payload {
                bytes.withUnsafeBytes { applyValue(of: type, to: id, value, payload: $0, releasing: true) } ?? .applied
            } else {
                applyValue(of: type, to: id, value, payload: nil, releasing: true) ?? .applied
            }
            if outcome == .applied { replicas.status.applied += 1 }
            outcomes.append(outcome)
        }
        return outcomes
    }

    /// Values held right now, by reason.
    func heldCounts() -> [String: Int] {
        var counts: [String: Int] = [:]
        forEach(ReplicaState.self) { _, state in
            for entry in state.held { counts[entry.value.reason.description, default: 0] += 1 }
        }
        return counts
    }
}

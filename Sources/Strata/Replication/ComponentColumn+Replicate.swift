/// A column's side of replication: the changes of its replicated values not yet logged
/// as operations, and the values other devices' operations set. Tick thread.
extension ComponentColumn {
    /// Moves the slots whose replica bit is set into `keys`, with their current values
    /// (nil: removed), and clears that bit. A slot whose row is also dirty is handed
    /// over with `persist` set and its dirty bit cleared: its row is written with the
    /// operation, in the same commit as the stamp.
    @usableFromInline
    func takeReplicated(into keys: inout [ReplicatedKey]) {
        var queued: [UInt32] = []
        swap(&queued, &queuedReplicated)
        for entityIndex in queued {
            let i = Int(entityIndex)
            guard slots[i].replicaDirty else { continue }
            slots[i].replicaDirty = false
            let persist = slots[i].dirty
            slots[i].dirty = false
            let d = slots[i].dense
            keys.append(ReplicatedKey(entityIndex: entityIndex, value: d >= 0 ? values[Int(d)] : nil, persist: persist))
        }
        queued.removeAll(keepingCapacity: true)
        swap(&queued, &queuedReplicated)
    }

    /// The entity slots that have a value.
    @usableFromInline
    var entityIndices: [UInt32] { owners }

    @usableFromInline
    func isReplicaDirty(_ entityIndex: UInt32) -> Bool {
        Int(entityIndex) < slots.count && slots[Int(entityIndex)].replicaDirty
    }

    @usableFromInline
    func removeValue(at entityIndex: UInt32) -> Bool {
        remove(at: entityIndex) != nil
    }

    /// Queues the slot for the critical tier even if it is queued for the derived one
    /// already: an applied value is committed with its stamp. Returns true if this was
    /// the column's first critical key (the tracker must hear of it).
    @inlinable
    func queueCritical(_ entityIndex: UInt32) -> Bool {
        growSlots(to: entityIndex)
        slots[Int(entityIndex)].dirty = true
        queuedCritical.append(entityIndex)
        return queuedCritical.count == 1
    }
}

/// One replicated key taken for logging: the entity's slot, its value now (nil:
/// removed), and whether its row must be written with the operation.
@usableFromInline
struct ReplicatedKey {
    var entityIndex: UInt32
    var value: Optional<any Component>   // spelled out: no implicit nil to assign over (`ComponentWrite`)
    var persist: Bool
}

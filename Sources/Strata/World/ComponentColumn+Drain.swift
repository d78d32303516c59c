/// The drain of one column: its dirty keys of a tier, with their current values, into a
/// batch's writes. Tick thread.
///
/// A column is generic over its component type, and the world holds columns of every
/// type, so a method of the column reached through the world runs unspecialized: every
/// value copy and array append would go through `C`'s runtime metadata (about 30 ns a
/// key, most of a derived flush's cost on the tick thread). So the loop is a requirement
/// of ``Component`` with a default implementation, ``Component/_strataDrain(_:_:)``: the
/// conformance's witness is compiled where the conformance is, with `C` known, and the
/// loop is specialized there (the standard library's default implementations work the
/// same way). ``World/drain(_:into:at:)`` calls it through the component type it keeps
/// beside each column (`drainTargets`), one indirect call per dirty column; the
/// column's existential and an unspecialized method in between cost a critical flush
/// of one key about 1.3 µs more when its code and data had gone cold (A/B with a
/// probe, 4 ms between flushes: 4.85 → 3.57 µs for the column, 8 runs each).
extension ComponentColumn {
    /// Moves the tier's dirty slots into `writes`, with their current values.
    /// See ``World/drain(_:into:at:)`` for the rules.
    @inlinable @inline(__always)
    func drainKeys(_ tier: Tier, records: UnsafeBufferPointer<World.EntityRecord>, into writes: inout [ComponentWrite]) {
        // The tier's list is moved out for the loop and back (emptied, capacity kept), so
        // that emptying it copies nothing.
        var queued: [UInt32] = []
        if tier == .critical { swap(&queued, &queuedCritical) } else { swap(&queued, &queuedDerived) }
        writes.reserve(atLeast: queued.count)
        // One access to `values` for the whole loop (it is exclusivity-checked: `mutate`
        // lends it), not one per key.
        values.withUnsafeBufferPointer { values in
            for entityIndex in queued {
                let i = Int(entityIndex)
                guard slots[i].dirty else { continue }
                let record = records[i]
                // Keys of an entity whose spawn is not drained yet travel with the spawn.
                if tier != .critical && record.spawnPending { continue }
                // A replicated value not yet logged is written by the critical drain that logs
                // it, with its operation and stamp: never a row without them (a crash between).
                if C.replication != .local && tier != .critical && slots[i].replicaDirty { continue }
                slots[i].dirty = false
                let d = slots[i].dense
                writes.append(ComponentWrite(entity: record.number, typeIndex: typeIndex, typeName: typeName,
                                             value: d >= 0 ? values[Int(d)] : nil))
            }
        }
        queued.removeAll(keepingCapacity: true)
        if tier == .critical { swap(&queued, &queuedCritical) } else { swap(&queued, &queuedDerived) }
    }
}

/// What ``Component/_strataDrain(_:_:)`` works on, behind a raw pointer: the
/// requirement is public, these types are not.
@usableFromInline
struct ColumnDrainContext {
    @usableFromInline var tier: Tier
    @usableFromInline var records: UnsafeBufferPointer<World.EntityRecord>
    @usableFromInline var writes: [ComponentWrite]

    @usableFromInline
    init(tier: Tier, records: UnsafeBufferPointer<World.EntityRecord>, writes: [ComponentWrite]) {
        self.tier = tier
        self.records = records
        self.writes = writes
    }
}

extension Component {
    /// Strata's drain of a column of this type (see `ComponentColumn+Drain.swift`).
    /// Provided by Strata; do not implement it.
    @inlinable
    public static func _strataDrain(_ column: AnyObject, _ context: UnsafeMutableRawPointer) {
        let context = context.assumingMemoryBound(to: ColumnDrainContext.self)
        unsafeDowncast(column, to: ComponentColumn<Self>.self)
            .drainKeys(context.pointee.tier, records: context.pointee.records, into: &context.pointee.writes)
    }
}

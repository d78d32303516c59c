/// Storage for one component type: a sparse set with a dirty bit per entity slot and
/// the slots queued for each persisted tier.
///
/// Owned by the tick thread (inside ``World``).
///
/// `values` and `owners` are dense and parallel (iteration touches only entities that
/// have the component); `slots` is indexed by entity slot and maps to the dense index.
/// The dirty bit lives in `slots`, not in the dense arrays, so it survives a `remove`:
/// a removed component is still dirty until drained, and drains as a row delete.
/// Trade-off: a sparse set costs 8 bytes per entity slot per type even for entities
/// without the component, in exchange for O(1) insert, remove and dirty checks, and a
/// drain that works through one type at a time.
@usableFromInline
final class ComponentColumn<C: Component>: AnyComponentColumn {
    @usableFromInline typealias Slot = ColumnSlot

    @usableFromInline let typeIndex: UInt32
    /// `C.typeName`, read once.
    @usableFromInline let typeName: String
    @usableFromInline var values: [C] = []
    @exclusivity(unchecked) @usableFromInline var owners: [UInt32] = []
    // Never borrowed across user code (see `World.records`): exclusivity checks skipped.
    @exclusivity(unchecked) @usableFromInline var slots: [Slot] = []
    /// Slots whose dirty bit was set, per persisted tier. Two arrays, not an array of
    /// two: the outer array's buffer would be one more cache line (and page) to touch,
    /// cold, on the tick of a critical change and on its flush.
    @exclusivity(unchecked) @usableFromInline var queuedCritical: [UInt32] = []
    @exclusivity(unchecked) @usableFromInline var queuedDerived: [UInt32] = []
    /// Slots whose replica bit was set: changes of a replicated type not yet logged as
    /// operations (`World+Replicate.swift`). Empty for local types.
    @exclusivity(unchecked) @usableFromInline var queuedReplicated: [UInt32] = []

    @usableFromInline
    init(typeIndex: UInt32) {
        self.typeIndex = typeIndex
        self.typeName = C.typeName
    }

    @usableFromInline
    var componentType: any Component.Type { C.self }
    @usableFromInline
    var count: Int { values.count }

    @inlinable @inline(__always)
    func denseIndex(_ entityIndex: UInt32) -> Int? {
        let i = Int(entityIndex)
        guard i < slots.count else { return nil }
        let d = slots[i].dense
        return d >= 0 ? Int(d) : nil
    }

    @inlinable
    func growSlots(to entityIndex: UInt32) {
        let needed = Int(entityIndex) + 1
        if slots.count < needed {
            slots.append(contentsOf: repeatElement(Slot(), count: max(needed - slots.count, slots.count / 2)))
        }
    }

    /// Makes room for entity slots below `count` (not for values: an entity may not have one).
    @usableFromInline
    func reserveSlots(_ count: Int) {
        if slots.capacity < count { slots.reserveCapacity(max(count, 2 * slots.capacity)) }
    }

    /// Stores `value`; returns true if the entity had no value before.
    @inlinable @inline(__always)
    @discardableResult
    func set(_ value: C, at entityIndex: UInt32) -> Bool {
        if let d = denseIndex(entityIndex) {
            values[d] = value
            return false
        }
        growSlots(to: entityIndex)
        slots[Int(entityIndex)].dense = Int32(values.count)
        values.append(value)
        owners.append(entityIndex)
        return true
    }

    /// Swap-removes the entity's value; returns it if there was one.
    @inlinable
    @discardableResult
    func remove(at entityIndex: UInt32) -> C? {
        guard let d = denseIndex(entityIndex) else { return nil }
        let removed = values[d]
        let last = values.count - 1
        if d != last {
            values[d] = values[last]
            owners[d] = owners[last]
            slots[Int(owners[d])].dense = Int32(d)
        }
        values.removeLast()
        owners.removeLast()
        slots[Int(entityIndex)].dense = -1
        return removed
    }

    /// Sets the dirty bit and queues the slot for `tier`. Returns true if this was the
    /// tier's first queued key in this column (the tracker must hear of it).
    @inlinable @inline(__always)
    func markDirty(_ entityIndex: UInt32, tier: Tier) -> Bool {
        growSlots(to: entityIndex)
        let i = Int(entityIndex)
        if slots[i].dirty { return false }
        slots[i].dirty = true
        if tier == .critical {
            queuedCritical.append(entityIndex)
            return queuedCritical.count == 1
        }
        queuedDerived.append(entityIndex)
        return queuedDerived.count == 1
    }

    /// Sets the replica bit and queues the slot for the next operations. Returns how many
    /// slots are queued now, 0 if this one already was: 1 is the column's first (the
    /// tracker must hear of it), and a long queue is logged ahead of its drain.
    @inlinable @inline(__always)
    func markReplicaDirty(_ entityIndex: UInt32) -> Int {
        growSlots(to: entityIndex)
        let i = Int(entityIndex)
        if slots[i].replicaDirty { return 0 }
        slots[i].replicaDirty = true
        queuedReplicated.append(entityIndex)
        return queuedReplicated.count
    }

    @usableFromInline
    func queuedCount(_ tier: Tier) -> Int { tier == .critical ? queuedCritical.count : queuedDerived.count }

    /// Clears the entity's value and dirty bit (despawn): its queued entries go stale.
    @usableFromInline
    func forget(_ entityIndex: UInt32) {
        remove(at: entityIndex)
        if Int(entityIndex) < slots.count {
            slots[Int(entityIndex)].dirty = false
            slots[Int(entityIndex)].replicaDirty = false
        }
    }
}

/// One entity slot of a column. Not nested in the generic class: the drain runs
/// unspecialized (through ``AnyComponentColumn``), and a non-generic element type keeps
/// its array accesses free of runtime metadata lookups.
@usableFromInline
struct ColumnSlot {
    /// Index into `values`, or -1.
    @usableFromInline var dense: Int32 = -1
    /// Set when the value changed and has not been drained since.
    @usableFromInline var dirty = false
    /// Set when a replicated value changed here and no operation says so yet.
    @usableFromInline var replicaDirty = false

    @usableFromInline init() {}
}

/// The type-erased face of ``ComponentColumn`` that the world and the drain use.
@usableFromInline
protocol AnyComponentColumn: AnyObject {
    var typeIndex: UInt32 { get }
    var componentType: any Component.Type { get }
    var count: Int { get }
    func forget(_ entityIndex: UInt32)
    func snapshot(records: UnsafeBufferPointer<World.EntityRecord>, into writes: inout [ComponentWrite])
    func queuedCount(_ tier: Tier) -> Int
    func denseIndex(_ entityIndex: UInt32) -> Int?
    func markDirty(_ entityIndex: UInt32, tier: Tier) -> Bool
    func reserveSlots(_ count: Int)
    func load(from payload: inout PayloadReader, version: Int, at entityIndex: UInt32) throws
    func load(_ rows: UnsafeBufferPointer<LoadedRow>, bytes: UnsafeRawBufferPointer, failures: inout [LoadFailure],
              queueCritical: Bool) -> Bool
    func takeReplicated(into keys: inout [ReplicatedKey])
    func isReplicaDirty(_ entityIndex: UInt32) -> Bool
    func removeValue(at entityIndex: UInt32) -> Bool
    func queueCritical(_ entityIndex: UInt32) -> Bool
    func markReplicaDirty(_ entityIndex: UInt32) -> Int
    var entityIndices: [UInt32] { get }
    /// Makes this column's values equal `past`'s column of the same type, entity by entity
    /// (`History/ComponentColumn+Rewind.swift`). Returns the values set and removed.
    func adopt(_ past: AnyComponentColumn, of pastWorld: World, in world: World) -> (set: Int, removed: Int)
}

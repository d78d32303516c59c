/// Storage for one component type: a sparse set with a dirty bit per entity slot.
///
/// Owned by the tick thread (inside ``World``).
///
/// `values` and `owners` are dense and parallel (iteration touches only entities that
/// have the component); `slots` is indexed by entity slot and maps to the dense index.
/// The dirty bit lives in `slots`, not in the dense arrays, so it survives a `remove`:
/// a removed component is still dirty until drained, and drains as a row delete.
/// Trade-off: a sparse set costs 8 bytes per entity slot per type even for entities
/// without the component, in exchange for O(1) insert, remove and dirty checks.
final class ComponentColumn<C: Component>: AnyComponentColumn {
    struct Slot {
        /// Index into `values`, or -1.
        var dense: Int32 = -1
        /// Set when the value changed and has not been drained since.
        var dirty = false
    }

    let typeIndex: UInt32
    var values: [C] = []
    var owners: [UInt32] = []
    var slots: [Slot] = []

    init(typeIndex: UInt32) { self.typeIndex = typeIndex }

    var componentType: any Component.Type { C.self }
    var count: Int { values.count }

    @inline(__always)
    func denseIndex(_ entityIndex: UInt32) -> Int? {
        let i = Int(entityIndex)
        guard i < slots.count else { return nil }
        let d = slots[i].dense
        return d >= 0 ? Int(d) : nil
    }

    func contains(_ entityIndex: UInt32) -> Bool { denseIndex(entityIndex) != nil }

    @inline(__always)
    func growSlots(to entityIndex: UInt32) {
        let needed = Int(entityIndex) + 1
        if slots.count < needed {
            slots.append(contentsOf: repeatElement(Slot(), count: max(needed - slots.count, slots.count / 2)))
        }
    }

    /// Stores `value`; returns true if the entity had no value before.
    @inline(__always)
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

    func removeAny(at entityIndex: UInt32) { remove(at: entityIndex) }

    /// Sets the dirty bit; returns true if it was clear (the caller then queues the key).
    @inline(__always)
    func markDirty(_ entityIndex: UInt32) -> Bool {
        growSlots(to: entityIndex)
        let i = Int(entityIndex)
        if slots[i].dirty { return false }
        slots[i].dirty = true
        return true
    }

    func isDirty(_ entityIndex: UInt32) -> Bool {
        Int(entityIndex) < slots.count && slots[Int(entityIndex)].dirty
    }

    func clearDirty(_ entityIndex: UInt32) {
        if Int(entityIndex) < slots.count { slots[Int(entityIndex)].dirty = false }
    }

    func boxedValue(_ entityIndex: UInt32) -> (any Component)? {
        denseIndex(entityIndex).map { values[$0] }
    }

    func load(from payload: inout PayloadReader, version: Int, at entityIndex: UInt32) throws {
        set(try C(from: &payload, version: version), at: entityIndex)
    }

    func reserve(_ capacity: Int) {
        values.reserveCapacity(capacity)
        owners.reserveCapacity(capacity)
    }
}

/// The type-erased face of ``ComponentColumn`` that the world and the drain use.
protocol AnyComponentColumn: AnyObject {
    var typeIndex: UInt32 { get }
    var componentType: any Component.Type { get }
    var count: Int { get }
    func contains(_ entityIndex: UInt32) -> Bool
    func removeAny(at entityIndex: UInt32)
    func isDirty(_ entityIndex: UInt32) -> Bool
    func clearDirty(_ entityIndex: UInt32)
    func boxedValue(_ entityIndex: UInt32) -> (any Component)?
    func load(from payload: inout PayloadReader, version: Int, at entityIndex: UInt32) throws
    func reserve(_ capacity: Int)
}

/// The stamp of every replicated (entity, type): per replicated column, an array by
/// entity slot. Tick thread (inside ``World``'s ``ReplicaBook``).
///
/// A pulled value is compared with its key's stamp and, applied, writes it: here that
/// is an array read and an array write. Kept in a list per entity instead (as the stored
/// form, ``ReplicaState``, keeps them), every replicated entity would be a heap object
/// made, copied and freed on the tick thread, and a device joining a document of 10k
/// shapes would touch about twice the memory for them, each new page a fault.
///
/// A stamp stays when its value is removed (the removal's stamp: an older set must not
/// bring the value back) and goes when the entity is despawned (its slot may be reused).
/// `.zero` is "no stamp". What has no replicated column (a type this build does not
/// know, or declares local) is kept in the entity's ``ReplicaState`` with its held values.
struct StampTable {
    /// By column type index; empty for a column that is not replicated.
    private var columns: [StampChunks] = []
    /// The replicated columns' type indices in type-name order: a stored state lists its
    /// stamps in that order.
    private(set) var order: [(typeIndex: UInt32, name: String)] = []

    /// Makes `typeIndex` (named `name`) a replicated column: its stamps are kept here.
    mutating func add(_ typeIndex: UInt32, name: String) {
        let t = Int(typeIndex)
        if columns.count <= t { columns += repeatElement(StampChunks(), count: t + 1 - columns.count) }
        guard !order.contains(where: { $0.typeIndex == typeIndex }) else { return }
        let at = order.firstIndex { $0.name > name } ?? order.endIndex
        order.insert((typeIndex, name), at: at)
    }

    /// Whether `typeIndex` is a column whose stamps are kept here.
    func keeps(_ typeIndex: Int) -> Bool {
        order.contains { Int($0.typeIndex) == typeIndex }
    }

    @inline(__always)
    func stamp(_ typeIndex: Int, _ slot: UInt32) -> OperationStamp {
        guard typeIndex < columns.count else { return .zero }
        return columns[typeIndex][slot]
    }

    @inline(__always)
    mutating func set(_ typeIndex: Int, _ slot: UInt32, _ stamp: OperationStamp) {
        columns[typeIndex][slot] = stamp
    }

    /// Makes room for entity slots below `slots` in every replicated column (a pull about
    /// to bring that many entities), so they are not regrown on the way.
    mutating func reserve(slots: Int) {
        for (typeIndex, _) in order { columns[Int(typeIndex)].reserve(slots: slots) }
    }

    /// The slots among `slots` that have no stamp of column `typeIndex`, in their order.
    func unstamped(_ typeIndex: Int, among slots: [UInt32]) -> [UInt32] {
        guard typeIndex < columns.count else { return slots }
        return columns[typeIndex].unstamped(among: slots)
    }

    /// Whether the entity in `slot` has a stamp for any replicated column.
    func hasAny(_ slot: UInt32) -> Bool {
        order.contains { !stamp(Int($0.typeIndex), slot).isZero }
    }

    /// Forgets the stamps of the entity in `slot` (despawned: the slot may be reused).
    mutating func clear(_ slot: UInt32) {
        for (typeIndex, _) in order where !columns[Int(typeIndex)][slot].isZero {
            columns[Int(typeIndex)][slot] = .zero
        }
    }

    /// The entity's stamps, in type-name order.
    func stamps(of slot: UInt32) -> [ReplicaState.Stamped] {
        var stamps: [ReplicaState.Stamped] = []
        append(stampsOf: slot, to: &stamps)
        return stamps
    }

    /// Appends the entity's stamps to `list`, in type-name order.
    func append(stampsOf slot: UInt32, to list: inout [ReplicaState.Stamped]) {
        for (typeIndex, name) in order {
            let stamp = stamp(Int(typeIndex), slot)
            if !stamp.isZero { list.append(ReplicaState.Stamped(type: name, stamp: stamp)) }
        }
    }
}

/// One replicated column's stamps by entity slot, in chunks of 16,384 (384 KB): growing
/// adds a chunk and copies none. As one array that doubled, a world growing to a million
/// shapes copied and cleared tens of megabytes a type in one tick (33 ms on the
/// development VM, the slowest tick of that growth).
struct StampChunks {
    private static let shift = 14
    private static let mask = (1 << shift) - 1
    private var chunks: [[OperationStamp]] = []

    /// The slot's stamp; `.zero` past the last chunk. Setting one past it adds chunks.
    subscript(slot: UInt32) -> OperationStamp {
        @inline(__always) get {
            let chunk = Int(slot) >> Self.shift
            guard chunk < chunks.count else { return .zero }
            return chunks[chunk].withUnsafeBufferPointer { $0[Int(slot) & Self.mask] }
        }
        @inline(__always) set {
            let chunk = Int(slot) >> Self.shift
            while chunks.count <= chunk { chunks.append(Array(repeating: .zero, count: Self.mask + 1)) }
            chunks[chunk][Int(slot) & Self.mask] = newValue
        }
    }

    /// The slots among `slots` whose stamp is `.zero`, in their order.
    func unstamped(among slots: [UInt32]) -> [UInt32] {
        var result: [UInt32] = []
        for slot in slots {
            let chunk = Int(slot) >> Self.shift
            if chunk >= chunks.count || chunks[chunk][Int(slot) & Self.mask].isZero { result.append(slot) }
        }
        return result
    }

    /// Room in the chunk list for slots below `slots` (the chunks come as they are set).
    mutating func reserve(slots: Int) {
        chunks.reserveCapacity((slots >> Self.shift) + 1)
    }
}

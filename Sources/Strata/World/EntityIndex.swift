import CStrataPrefetch

/// The world's index of live entities by stable id: id → slot. Tick thread (inside ``World``).
///
/// An open-addressing table with linear probing. A cell is 8 bytes: the entity's slot and
/// a 32-bit tag of its id's hash; the id itself is the world's record of that slot (`ids`),
/// read only when a tag matches. A device joining a document finds or spawns an entity for
/// every value it pulls, at a random place in this table: a `Dictionary` (its bitmap, keys
/// and values apart, SipHash per id) made that a fifth of the work, most of it cache
/// misses, and cells of 8 bytes put three times as many ids in a cache line (and in the
/// cache) as cells holding the id. Ids come from peers, so the hash is seeded per table (a
/// peer cannot choose ids that collide here without knowing the seed).
///
/// Invariants:
/// 1. Every indexed id is in the run of occupied cells that starts at its home cell,
///    with no free cell between: deletion shifts later cells of the run back instead of
///    leaving markers (Knuth's algorithm R).
/// 2. At most half the cells are occupied, and the number of cells is a power of two (or zero).
/// 3. A cell's slot holds its id in `ids` whenever the table is probed (``World`` writes the
///    record before anything else looks the id up).
struct EntityIndex {
    private struct Cell {
        var tag: UInt32
        /// The entity's slot; ``free`` for an empty cell.
        var slot: UInt32
    }

    private static let free = UInt32.max
    private var cells: [Cell] = []
    private(set) var count = 0
    /// `64 − log2(cells)`: a hash's home cell is its top bits (``home(_:)``).
    private var homeShift: UInt64 = 64
    private let seed: (UInt64, UInt64) = (.random(in: .min ... .max), .random(in: .min ... .max))

    /// Ids it holds without growing.
    var capacity: Int { cells.count / 2 }

    /// The slot of `id`, if it is indexed. `ids`: the id each slot holds.
    func find(_ id: EntityID, ids: (UInt32) -> EntityID) -> UInt32? {
        guard count > 0 else { return nil }
        let hash = hash(id)
        let (mask, tag) = (cells.count - 1, UInt32(truncatingIfNeeded: hash >> 32))
        var i = home(hash)
        while true {
            let cell = cells[i]
            if cell.slot == Self.free { return nil }
            if cell.tag == tag && ids(cell.slot) == id { return cell.slot }
            i = (i + 1) & mask
        }
    }

    /// The slot of `id`, or `slot` once indexed under it (`inserted`): one probe for both.
    /// The caller then makes `slot` hold `id` (invariant 3).
    mutating func findOrInsert(_ id: EntityID, slot: UInt32, ids: (UInt32) -> EntityID) -> (slot: UInt32, inserted: Bool) {
        precondition(slot != Self.free, "slot \(slot) is the free marker")
        if (count + 1) * 2 > cells.count { grow(to: count + 1, ids: ids) }
        let hash = hash(id)
        let (mask, tag) = (cells.count - 1, UInt32(truncatingIfNeeded: hash >> 32))
        var i = home(hash)
        while true {
            let cell = cells[i]
            if cell.slot == Self.free {
                cells[i] = Cell(tag: tag, slot: slot)
                count += 1
                return (slot, true)
            }
            if cell.tag == tag && ids(cell.slot) == id { return (cell.slot, false) }
            i = (i + 1) & mask
        }
    }

    /// Removes `id`; returns its slot if it was indexed.
    @discardableResult
    mutating func remove(_ id: EntityID, ids: (UInt32) -> EntityID) -> UInt32? {
        guard count > 0 else { return nil }
        let hash = hash(id)
        let (mask, tag) = (cells.count - 1, UInt32(truncatingIfNeeded: hash >> 32))
        var i = home(hash)
        while cells[i].slot != Self.free {
            if cells[i].tag == tag && ids(cells[i].slot) == id {
                let slot = cells[i].slot
                closeGap(at: i, mask: mask, ids: ids)
                count -= 1
                return slot
            }
            i = (i + 1) & mask
        }
        return nil
    }

    /// Asks the cache for the home cell of the id whose two words are `words` (``EntityID``'s
    /// `words`, read straight from a payload): a hint, nothing is read or changed.
    /// Mutating only to be reached in place: the world's copy would be retained and released.
    mutating func prefetch(_ words: (UInt64, UInt64)) {
        guard count > 0 else { return }
        let home = home(hash(words))
        cells.withUnsafeBufferPointer { cells in if let base = cells.baseAddress { strata_prefetch(base + home) } }
    }

    /// Room for `total` ids without growing on the way (at least twice the room it had).
    mutating func reserveCapacity(_ total: Int, ids: (UInt32) -> EntityID) {
        if total > capacity { grow(to: total, ids: ids) }
    }

    /// Empties cell `start`, then moves back each later cell of its run whose home does not
    /// lie cyclically in (gap, cell]: the run stays unbroken (invariant 1).
    private mutating func closeGap(at start: Int, mask: Int, ids: (UInt32) -> EntityID) {
        var gap = start
        var i = (gap + 1) & mask
        while cells[i].slot != Self.free {
            let home = home(of: cells[i], ids: ids)
            let stays = gap <= i ? (gap < home && home <= i) : (gap < home || home <= i)
            if !stays {
                cells[gap] = cells[i]
                gap = i
            }
            i = (i + 1) & mask
        }
        cells[gap].slot = Self.free
    }

    private mutating func grow(to total: Int, ids: (UInt32) -> EntityID) {
        var size = max(16, cells.count)
        while size < total * 2 { size *= 2 }
        let old = cells
        cells = Array(repeating: Cell(tag: 0, slot: Self.free), count: size)
        homeShift = UInt64(64 - size.trailingZeroBitCount)
        let mask = size - 1
        // In cell order, homes in the new table come in order too: its writes go forward.
        for cell in old where cell.slot != Self.free {
            var i = home(of: cell, ids: ids)
            while cells[i].slot != Self.free { i = (i + 1) & mask }
            cells[i] = cell
        }
    }

    /// The home cell of the hash `hash`: its top bits (as many as the cells need).
    @inline(__always)
    private func home(_ hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash &>> homeShift)
    }

    /// The home cell of the id in `cell`. The tag is the hash's top 32 bits, and the home
    /// its top bits: while the table has at most 2³² cells, the tag says the home without
    /// a read of the id (a cache miss each). So a table of a million ids grows by reading
    /// its cells in order, and a removal closes its gap the same way.
    @inline(__always)
    private func home(of cell: Cell, ids: (UInt32) -> EntityID) -> Int {
        homeShift >= 32 ? Int(cell.tag &>> UInt32(homeShift - 32)) : home(hash(ids(cell.slot)))
    }

    /// The id's hash, seeded: its top bits pick the home cell, its top 32 are the tag.
    /// Both halves go through a 64-bit finalizer (MurmurHash3's), so that ids differing
    /// in a few bits (time-ordered ids of one millisecond count up) land far apart.
    @inline(__always)
    private func hash(_ id: EntityID) -> UInt64 { hash(id.words) }

    @inline(__always)
    private func hash(_ words: (UInt64, UInt64)) -> UInt64 {
        Self.mix(words.0 ^ seed.0 ^ Self.mix(words.1 ^ seed.1))
    }

    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x &*= 0xFF51_AFD7_ED55_8CCD
        x ^= x >> 33
        x &*= 0xC4CE_B9FE_1A85_EC53
        x ^= x >> 33
        return x
    }
}

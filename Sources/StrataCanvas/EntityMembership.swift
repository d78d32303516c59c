import Strata

/// A set of entities kept by slot: membership is the entity's generation in an array its
/// slot indexes, so an insert or a lookup is an array access, not a hash. The scenario
/// lists a million shapes at the start of a big document: a `Set` spent a fifth of a
/// second hashing them before the first tick.
struct EntityMembership {
    /// By slot: the member's generation + 1, or 0.
    private var generations: [UInt32] = []

    init() {}

    func contains(_ entity: Entity) -> Bool {
        Int(entity.index) < generations.count && generations[Int(entity.index)] == entity.generation &+ 1
    }

    /// Whether `entity` was not a member before.
    @discardableResult
    mutating func insert(_ entity: Entity) -> Bool {
        let slot = Int(entity.index)
        if slot >= generations.count { generations += repeatElement(0, count: max(slot + 1 - generations.count, generations.count / 2)) }
        let inserted = generations[slot] != entity.generation &+ 1
        generations[slot] = entity.generation &+ 1
        return inserted
    }

    mutating func remove(_ entity: Entity) {
        if contains(entity) { generations[Int(entity.index)] = 0 }
    }
}

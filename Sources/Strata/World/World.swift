/// The entity-component world: entities, their components, and the change tracking
/// that feeds persistence.
///
/// Owned by the tick thread: every method checks it in debug builds. Mutations are
/// O(1) and mark the (entity, component type) key dirty with the type's ``Tier``;
/// nothing here touches the disk.
///
/// ```swift
/// let shape = world.spawn(Transform(x: 0, y: 0), ShapeStyle(color: 0xff0000))
/// world.mutate(Transform.self, of: shape) { $0.x += 4 }   // marked dirty
/// world.setIfChanged(Transform(x: 4, y: 0), for: shape)  // equal: skipped
/// ```
///
/// Spawns are critical: a spawned entity is written together with every component it
/// gets before the next critical flush, whatever their tiers, so after a crash there
/// is never an entity row without its initial components.
public final class World {
    struct EntityRecord {
        var id: EntityID
        var generation: UInt32
        var alive: Bool
        /// Spawned, and the spawn not yet drained into a batch: its components go critical.
        var spawnPending: Bool
    }

    var records: [EntityRecord] = []
    private var freeSlots: [UInt32] = []
    private var indexByID: [EntityID: UInt32] = [:]
    var columns: [any AnyComponentColumn] = []
    private var columnByType: [ObjectIdentifier: Int] = [:]
    var tracker = DirtyTracker()
    let clock: any StrataClock
    var owner = ThreadOwner()
    public private(set) var entityCount = 0

    /// A world whose change instants come from `clock`.
    public init(clock: any StrataClock = MonotonicClock()) {
        self.clock = clock
    }

    // MARK: Component types

    /// Registers a component type, so rows of its ``Component/typeName`` load on open.
    /// Types are also registered on first use.
    public func register<C: Component>(_ type: C.Type) {
        _ = column(C.self)
    }

    func register(any type: any Component.Type) {
        func open<C: Component>(_ t: C.Type) { register(t) }
        open(type)
    }

    /// The registered component types, in registration order.
    public var componentTypes: [any Component.Type] { columns.map(\.componentType) }

    @inline(__always)
    func column<C: Component>(_ type: C.Type) -> ComponentColumn<C> {
        if let i = columnByType[ObjectIdentifier(type)] {
            return unsafeDowncast(columns[i], to: ComponentColumn<C>.self)
        }
        let column = ComponentColumn<C>(typeIndex: UInt32(columns.count))
        columnByType[ObjectIdentifier(type)] = columns.count
        columns.append(column)
        return column
    }

    // MARK: Entities

    /// Spawns an entity with a new random id (or `id`, to restore a known one).
    @discardableResult
    public func spawn(id: EntityID = EntityID()) -> Entity {
        owner.check("World")
        let entity = makeEntity(id: id, spawnPending: true)
        tracker.markSpawn(entity, id: id, now: clock.now)
        return entity
    }

    /// Spawns an entity with its initial components, persisted together.
    @discardableResult
    public func spawn<each C: Component>(_ components: repeat each C) -> Entity {
        let entity = spawn()
        repeat insert(each components, for: entity)
        return entity
    }

    func makeEntity(id: EntityID, spawnPending: Bool) -> Entity {
        let index: UInt32
        if let reused = freeSlots.popLast() {
            index = reused
            records[Int(index)].id = id
            records[Int(index)].generation &+= 1
            records[Int(index)].alive = true
            records[Int(index)].spawnPending = spawnPending
        } else {
            index = UInt32(records.count)
            records.append(EntityRecord(id: id, generation: 0, alive: true, spawnPending: spawnPending))
        }
        indexByID[id] = index
        entityCount += 1
        return Entity(index: index, generation: records[Int(index)].generation)
    }

    /// Despawns the entity: drops its pending writes and deletes its rows at the next
    /// critical flush (components go with it, `ON DELETE CASCADE`).
    /// Returns false if the handle was already dead.
    @discardableResult
    public func despawn(_ entity: Entity) -> Bool {
        owner.check("World")
        guard isAlive(entity) else { return false }
        let i = Int(entity.index)
        for column in columns {
            column.removeAny(at: entity.index)
            column.clearDirty(entity.index)
        }
        let record = records[i]
        if !record.spawnPending {
            tracker.markDespawn(record.id, now: clock.now)
        }
        // A pending spawn is cancelled: the drain skips spawns whose generation moved on.
        records[i].alive = false
        records[i].spawnPending = false
        records[i].generation &+= 1
        indexByID[record.id] = nil
        freeSlots.append(entity.index)
        entityCount -= 1
        return true
    }

    @inline(__always)
    public func isAlive(_ entity: Entity) -> Bool {
        let i = Int(entity.index)
        return i < records.count && records[i].generation == entity.generation && records[i].alive
    }

    /// The stable id of a live entity.
    public func id(of entity: Entity) -> EntityID? {
        isAlive(entity) ? records[Int(entity.index)].id : nil
    }

    /// The live entity with this stable id, if any.
    public func entity(for id: EntityID) -> Entity? {
        guard let index = indexByID[id] else { return nil }
        return Entity(index: index, generation: records[Int(index)].generation)
    }

    /// Every live entity, in slot order.
    public var entities: [Entity] {
        records.indices.compactMap { i in
            records[i].alive ? Entity(index: UInt32(i), generation: records[i].generation) : nil
        }
    }

    // MARK: Components

    /// Inserts or replaces the entity's `C`, marking it dirty. False if the entity is dead.
    @inline(__always)
    @discardableResult
    public func insert<C: Component>(_ value: C, for entity: Entity) -> Bool {
        owner.check("World")
        guard isAlive(entity) else { return false }
        let column = column(C.self)
        column.set(value, at: entity.index)
        markDirty(column, entity.index, tier: C.tier)
        return true
    }

    /// Inserts or replaces `value` only if it differs from the current one
    /// (bevy's `set_if_neq`): an equal value is neither stored nor marked dirty.
    /// Returns true if the value changed.
    @discardableResult
    public func setIfChanged<C: Component>(_ value: C, for entity: Entity) -> Bool {
        owner.check("World")
        guard isAlive(entity) else { return false }
        let column = column(C.self)
        if let d = column.denseIndex(entity.index), column.values[d] == value { return false }
        column.set(value, at: entity.index)
        markDirty(column, entity.index, tier: C.tier)
        return true
    }

    /// The entity's `C`, if it has one.
    @inline(__always)
    public func get<C: Component>(_ type: C.Type, for entity: Entity) -> C? {
        owner.check("World")
        guard isAlive(entity) else { return nil }
        let column = column(C.self)
        return column.denseIndex(entity.index).map { column.values[$0] }
    }

    /// Mutates the entity's `C` in place and marks it dirty; nil if it has none.
    @inline(__always)
    @discardableResult
    public func mutate<C: Component, R>(_ type: C.Type, of entity: Entity, _ body: (inout C) throws -> R) rethrows -> R? {
        owner.check("World")
        guard isAlive(entity) else { return nil }
        let column = column(C.self)
        guard let d = column.denseIndex(entity.index) else { return nil }
        let result = try body(&column.values[d])
        markDirty(column, entity.index, tier: C.tier)
        return result
    }

    /// Removes the entity's `C` (its row is deleted at the tier's next flush) and returns it.
    @discardableResult
    public func remove<C: Component>(_ type: C.Type, from entity: Entity) -> C? {
        owner.check("World")
        guard isAlive(entity) else { return nil }
        let column = column(C.self)
        guard let removed = column.remove(at: entity.index) else { return nil }
        markDirty(column, entity.index, tier: C.tier)
        return removed
    }

    /// Whether the entity has a `C`.
    public func has<C: Component>(_ type: C.Type, _ entity: Entity) -> Bool {
        isAlive(entity) && column(C.self).contains(entity.index)
    }

    /// Number of entities that have a `C`.
    public func count<C: Component>(of type: C.Type) -> Int { column(C.self).count }

    /// Calls `body` for every entity that has a `C`, with its value.
    public func forEach<C: Component>(_ type: C.Type, _ body: (Entity, C) throws -> Void) rethrows {
        owner.check("World")
        let column = column(C.self)
        for d in column.values.indices {
            let index = column.owners[d]
            try body(Entity(index: index, generation: records[Int(index)].generation), column.values[d])
        }
    }

    /// The entities that have a `C`, with their values (a snapshot).
    public func entities<C: Component>(with type: C.Type) -> [(entity: Entity, value: C)] {
        var result: [(entity: Entity, value: C)] = []
        forEach(type) { result.append(($0, $1)) }
        return result
    }

    // MARK: Change tracking

    @inline(__always)
    private func markDirty<C: Component>(_ column: ComponentColumn<C>, _ entityIndex: UInt32, tier: Tier) {
        guard tier != .ephemeral else { return }
        guard column.markDirty(entityIndex) else { return }
        // A component set before the entity's spawn is drained travels with the spawn.
        let effectiveTier: Tier = records[Int(entityIndex)].spawnPending ? .critical : tier
        tracker.mark(DirtyKey(entityIndex: entityIndex, typeIndex: column.typeIndex), tier: effectiveTier, now: clock.now)
    }

    /// Keys waiting for `tier`'s next flush (an upper bound).
    public func pendingCount(_ tier: Tier) -> Int { tracker.pendingCount(tier) }

    /// When `tier` first became dirty since its last flush.
    public func firstPendingChange(_ tier: Tier) -> Instant? { tracker.firstDirty(tier) }
}

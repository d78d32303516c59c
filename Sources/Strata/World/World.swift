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
///
/// The component API (`World+Components.swift`) is `@inlinable`, so a host's calls
/// are specialized for its component types: marking a change costs a few nanoseconds.
public final class World {
    @usableFromInline
    struct EntityRecord {
        @usableFromInline var id: EntityID
        /// The entity's number in the database file: records and rows refer to it.
        @usableFromInline var number: EntityNumber
        @usableFromInline var generation: UInt32
        @usableFromInline var alive: Bool
        /// Spawned, and the spawn not yet drained into a batch: its components go critical.
        @usableFromInline var spawnPending: Bool
    }

    // Tick-thread storage that is never borrowed across a call into user code: its
    // accesses cannot overlap, so the dynamic exclusivity checks are skipped (they cost
    // more than the rest of a change-marking). Component values stay checked: `mutate`
    // lends them to the caller's closure.
    @exclusivity(unchecked) @usableFromInline var records: [EntityRecord] = []
    @exclusivity(unchecked) private var freeSlots: [UInt32] = []
    @exclusivity(unchecked) var indexByID = EntityIndex()
    /// Where new entity ids come from.
    @exclusivity(unchecked) private var newIDs = TimeOrderedIDs()
    @exclusivity(unchecked) @usableFromInline var columns: [any AnyComponentColumn] = []
    @usableFromInline var columnByType: [ObjectIdentifier: Int] = [:]
    /// Column index by ``Component/typeName`` (operations from other devices name types).
    @exclusivity(unchecked) var columnByName: [String: Int] = [:]
    /// Each column with its component type, by type index, for the drain: it calls the
    /// type's specialized drain directly (`ComponentColumn+Drain.swift`), not through the
    /// column's existential, whose code and metadata are cold on a flush tick; or the
    /// column's persistence hook, if it has one (`ColumnPersistence.swift`).
    @exclusivity(unchecked) var drainTargets: [(column: AnyObject, type: any Component.Type, hook: (any ColumnPersistence)?)] = []
    /// The last column looked up: hot loops touch one type many times in a row.
    @exclusivity(unchecked) @usableFromInline var lastColumn: (type: ObjectIdentifier, index: Int)?
    @exclusivity(unchecked) @usableFromInline var tracker = DirtyTracker()
    /// The column list of the tier being drained, swapped with the tracker's (reused).
    var drainScratch: [UInt32] = []
    /// The document's settings (`World+Settings.swift`), and those changed since the
    /// last critical drain (a nil value: removed).
    var settingValues: [String: SettingValue] = [:]
    var pendingSettings: [String: SettingValue?] = [:]
    /// Requests waiting to ride the next critical batch (``ride(_:)``).
    var riders: [WriterRequest] = []
    /// The replicated components' bookkeeping (`Sources/Strata/Replication`).
    @exclusivity(unchecked) var replicas = ReplicaBook()
    /// The operation log's tick-thread side (a fresh, unpersisted node until a reload
    /// sets the document's). Feed it through ``Engine/appendOperation(kind:payload:)``.
    @exclusivity(unchecked) public internal(set) var operationLog = OperationLog(node: NodeID())
    @usableFromInline let clock: any StrataClock
    @usableFromInline var owner = ThreadOwner()
    @exclusivity(unchecked) public private(set) var entityCount = 0
    /// The number the next spawn gets. Numbers are never reused while a record in the
    /// file may still refer to them: the reload starts above every number it saw.
    @exclusivity(unchecked) var nextEntityNumber: EntityNumber = 1
    /// The highest entity number a file may hold: a number above it read from disk is
    /// damage (kept, not loaded), so that counting on from the highest one seen never
    /// overflows (2^62: a spawn a nanosecond for 146 years).
    static let highestEntityNumber: EntityNumber = 1 << 62
    /// Keys the reload found written with an older payload version, the next to rewrite
    /// last (`Engine+Maintenance.swift`; `[maintenance] rewrite_old_payloads`).
    var olderPayloads: [OlderPayload] = []

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

    @inlinable @inline(__always)
    func column<C: Component>(_ type: C.Type) -> ComponentColumn<C> {
        let key = ObjectIdentifier(type)
        if let last = lastColumn, last.type == key {
            return unsafeDowncast(columns[last.index], to: ComponentColumn<C>.self)
        }
        return lookUpColumn(type)
    }

    @usableFromInline
    func lookUpColumn<C: Component>(_ type: C.Type) -> ComponentColumn<C> {
        let key = ObjectIdentifier(type)
        let index: Int
        if let known = columnByType[key] {
            index = known
        } else {
            index = columns.count
            columnByType[key] = index
            let column = ComponentColumn<C>(typeIndex: UInt32(index))
            columns.append(column)
            columnByName[C.typeName] = index
            drainTargets.append((column, C.self, (C.self as? any PersistedThroughHook.Type)?.persistence(column: index)))
            if C.replication != .local { replicas.stamps.add(UInt32(index), name: C.typeName) }
        }
        lastColumn = (key, index)
        return unsafeDowncast(columns[index], to: ComponentColumn<C>.self)
    }

    // MARK: Entities

    /// Spawns an entity with a new id (or `id`, to restore a known one, such as an entity
    /// despawned earlier or one received from a peer). Two live entities never share an
    /// id: `id` must not be alive in this world (a precondition).
    ///
    /// A new id is made from the document's node and the entity's number, so the file
    /// stores none of its bytes (an entity of a million-entity document costs about half
    /// the bytes); past number 2^49, or where such an id is taken already (given by the
    /// host), it is a time-ordered one (UUID version 7, ``EntityID/isTimeOrdered``). Ids of
    /// any other kind (random ones from older documents, a peer's) work the same.
    @discardableResult
    public func spawn(id: EntityID? = nil) -> Entity {
        owner.check("World")
        let id = id ?? newID()
        precondition(indexByID.find(id, ids: { self.records[Int($0)].id }) == nil, "spawn(id:): \(id) is already alive in this world")
        return spawnUnchecked(id: id)
    }

    /// The id of the next spawn that is given none: made from the node and the number
    /// it is about to get (`EntityIDColumn` stores it as NULL), unless that id is alive.
    private func newID() -> EntityID {
        if let derived = EntityID(node: operationLog.node, number: nextEntityNumber),
           indexByID.find(derived, ids: { self.records[Int($0)].id }) == nil {
            return derived
        }
        return newIDs.make()
    }

    /// Spawns an entity with `id`, known not to be alive (``spawn(id:)`` without its check).
    /// `indexed`: the id index has the entity's slot already (``entityOrSpawn(id:)``).
    func spawnUnchecked(id: EntityID, indexed: Bool = false) -> Entity {
        let number = nextEntityNumber
        nextEntityNumber += 1
        let entity = makeEntity(id: id, number: number, spawnPending: true, indexed: indexed)
        tracker.noteSpawn(entity, id: id, clock: clock)
        return entity
    }

    /// The live entity of `id`, or a new one spawned with it (`spawned`): one lookup of
    /// the id index for both (a pull spawns thousands).
    func entityOrSpawn(id: EntityID) -> (entity: Entity, spawned: Bool) {
        let next = freeSlots.last ?? UInt32(records.count)
        let (index, inserted) = indexByID.findOrInsert(id, slot: next, ids: { self.records[Int($0)].id })
        guard inserted else { return (Entity(index: index, generation: records[Int(index)].generation), false) }
        return (spawnUnchecked(id: id, indexed: true), true)   // takes slot `next`, as the index says
    }

    /// Spawns an entity with its initial components, persisted together.
    @inlinable
    @discardableResult
    public func spawn<each C: Component>(_ components: repeat each C) -> Entity {
        let entity = spawn()
        _ = (repeat insert(each components, for: entity))
        return entity
    }

    /// Runs `body` with the operation log borrowed: neither retained nor released (a
    /// `var`, it would be around every call; a pull calls it twice a value).
    @inline(__always)
    func withOperationLog<R>(_ body: (OperationLog) -> R) -> R {
        Unmanaged.passUnretained(operationLog)._withUnsafeGuaranteedRef(body)
    }

    /// `indexed`: the id index has the entity's slot already.
    func makeEntity(id: EntityID, number: EntityNumber, spawnPending: Bool, indexed: Bool = false) -> Entity {
        let index: UInt32
        if let reused = freeSlots.popLast() {
            index = reused
            records[Int(index)].id = id
            records[Int(index)].number = number
            records[Int(index)].generation &+= 1
            records[Int(index)].alive = true
            records[Int(index)].spawnPending = spawnPending
        } else {
            index = UInt32(records.count)
            records.append(EntityRecord(id: id, number: number, generation: 0, alive: true, spawnPending: spawnPending))
        }
        if !indexed { _ = indexByID.findOrInsert(id, slot: index, ids: { self.records[Int($0)].id }) }   // the record holds `id` already
        entityCount += 1
        return Entity(index: index, generation: records[Int(index)].generation)
    }

    /// Despawns the entity: drops its pending writes; the next critical flush records the
    /// despawn (from then on no reader of the file sees the entity, and its jobs and asset
    /// files go) and compaction deletes its rows later, components and all (a flush of
    /// many despawns, a level unloaded, deletes them at once).
    /// Returns false if the handle was already dead.
    ///
    /// An entity that carries replicated components is despawned on every device of the
    /// document: the despawn is logged as an operation, and wins over every edit of it.
    @discardableResult
    public func despawn(_ entity: Entity) -> Bool {
        despawn(entity, replicating: true)
    }

    /// Despawns; `replicating` false for a despawn that came from another device.
    func despawn(_ entity: Entity, replicating: Bool) -> Bool {
        owner.check("World")
        guard isAlive(entity) else { return false }
        let i = Int(entity.index)
        if replicating, isReplicated(entity) { logDespawn(of: records[i].id) }
        for column in columns { column.forget(entity.index) }
        replicas.stamps.clear(entity.index)
        let record = records[i]
        if !record.spawnPending {
            tracker.noteDespawn(record.number, clock: clock)
        }
        // A pending spawn is cancelled: the drain skips spawns whose generation moved on.
        records[i].alive = false
        records[i].spawnPending = false
        records[i].generation &+= 1
        indexByID.remove(record.id, ids: { self.records[Int($0)].id })
        freeSlots.append(entity.index)
        entityCount -= 1
        return true
    }

    @inlinable @inline(__always)
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
        guard let index = indexByID.find(id, ids: { self.records[Int($0)].id }) else { return nil }
        return Entity(index: index, generation: records[Int(index)].generation)
    }

    /// Every live entity, in slot order.
    public var entities: [Entity] {
        records.indices.compactMap { i in
            records[i].alive ? Entity(index: UInt32(i), generation: records[i].generation) : nil
        }
    }

    /// Hands `request` to the writer with the next critical batch, to run in its
    /// transaction (after the batch's rows: an entity spawned before is in the file by
    /// then). The critical tier goes dirty, so that batch comes within the critical
    /// delay; the request shares its commit and its one sync.
    func ride(_ request: WriterRequest) {
        owner.check("World")
        riders.append(request)
        tracker.noteCriticalWork(clock: clock)
    }

    // MARK: Pending changes

    /// Keys waiting for `tier`'s next flush (an upper bound: stale entries count).
    public func pendingCount(_ tier: Tier) -> Int {
        guard tier != .ephemeral else { return 0 }
        let keys = (tier == .critical ? tracker.criticalColumns : tracker.derivedColumns).reduce(0) { $0 + columns[Int($1)].queuedCount(tier) }
        let other = BatchSection.allCases.reduce(0) { $0 + $1.pending(in: self) }
        return keys + (tier == .critical ? other : 0)
    }

    /// When `tier` first became dirty since its last flush.
    public func firstPendingChange(_ tier: Tier) -> Instant? { tracker.firstDirty(tier) }
}

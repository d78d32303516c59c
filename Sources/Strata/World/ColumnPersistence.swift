/// How a column's rows reach the file when its values are not all of them. The engine's
/// replica states (``ReplicaState``) are the one such column: an entity's stored state is
/// also the stamps the world keeps beside the replicated columns (``StampTable``), built
/// into the row when it is written and split out of it when it is read.
///
/// Every path that persists a column asks the column's hook, when it has one, instead of
/// naming a type: the drain, a snapshot for a new file, the reload, a parked row's replay,
/// whether an entity has a row, and the room a pull reserves. A column without a hook is
/// persisted as its values are. Registered with the column (``World/lookUpColumn(_:)``)
/// for a type that is ``PersistedThroughHook``. Tick thread.
protocol ColumnPersistence: AnyObject {
    /// Whether the entity in `slot` has a row of this column, whatever the column's values hold.
    func hasRow(_ slot: UInt32, in world: World) -> Bool
    /// The column's dirty rows as writes (it is critical: a critical drain).
    func drain(_ world: World, records: UnsafeBufferPointer<World.EntityRecord>, into writes: inout [ComponentWrite])
    /// Every row of the column as writes, as stored (a new file written from the world).
    func snapshot(_ world: World, records: UnsafeBufferPointer<World.EntityRecord>, into writes: inout [ComponentWrite])
    /// Stored rows of the column into the world (a reload: base rows a run at a time, then
    /// the segment log's newer rows one by one), each replacing what its entity had; a row
    /// that does not decode is added to `failures` (its position), and its entity keeps
    /// nothing of the column. `names` are what the rows name by number.
    func load(_ rows: UnsafeBufferPointer<LoadedRow>, bytes: UnsafeRawBufferPointer, failures: inout [LoadFailure],
              names: StampNames, in world: World)
    /// The entity's row is gone (a newer removal, or a newer row that does not decode).
    func forgetLoaded(_ slot: UInt32, in world: World)
    /// The rows a reload put into the column, taken in (nothing marked dirty).
    func adoptLoaded(_ world: World)
    /// A parked row of the column (a removal, or a value) back into `entity`; why not, if it cannot be.
    func replay(_ row: RejectedWrite, of entity: Entity, in world: World) -> String?
    /// Room for `slots` entity slots (a pull about to bring many entities).
    func reserve(slots: Int, in world: World)
}

/// A component type whose column persists through a ``ColumnPersistence`` (the engine's own).
protocol PersistedThroughHook: Component {
    static func persistence(column: Int) -> any ColumnPersistence
}

extension World {
    /// The persistence hook of column `index`, if its type has one.
    func persistence(ofColumn index: Int) -> (any ColumnPersistence)? { drainTargets[index].hook }

    /// Every hook, for what concerns all hooked columns at once (the reload, a pull's room).
    var persistenceHooks: [any ColumnPersistence] { drainTargets.compactMap(\.hook) }
}

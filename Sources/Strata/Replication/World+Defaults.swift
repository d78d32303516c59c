/// Default values: what a host gives an entity at start (a document's name, a level's
/// settings) that must not replace what another device made. Tick thread.
///
/// A host that creates well-known entities at start (the same id on every device) with
/// ``World/insert(_:for:)`` would log those values as this device's newest edit: on a
/// device that opens a shared document for the first time, before it has pulled, they
/// would win over everything the others wrote. ``World/insertDefault(_:for:)`` logs them
/// as defaults instead: stamped below every real value (``OperationStamp/ofDefault(node:)``),
/// so the first value any device wrote replaces them, whenever it arrives, on every device.
extension World {
    /// Gives the entity `value` unless it has a `C` already: a value that only fills a gap.
    ///
    /// The entity has it at once (and it is saved like any change). For a replicated type
    /// it is also logged as a *default*: on every device it loses to any value of this type
    /// a device wrote for the entity (a set or a removal), whether that arrives before or
    /// after it; between two devices' defaults, the same one wins everywhere. A later
    /// change of the value here (``mutate(_:of:_:)``, ``insert(_:for:)``) is an ordinary
    /// edit, and wins by its stamp as usual.
    ///
    /// Returns false, changing nothing, if the entity is dead, has a `C`, or (a replicated
    /// type) has received a value or a removal of it from some device.
    @discardableResult
    public func insertDefault<C: Component>(_ value: C, for entity: Entity) -> Bool {
        owner.check("World")
        guard isAlive(entity) else { return false }
        let column = column(C.self)
        guard column.denseIndex(entity.index) == nil else { return false }
        guard C.replication != .local, C.tier != .ephemeral, !column.isReplicaDirty(entity.index) else {
            // Not replicated (or a change of it here waits to be logged: that is an edit).
            column.set(value, at: entity.index)
            markDirty(column, entity.index)
            return true
        }
        let typeIndex = Int(column.typeIndex)
        guard replicas.stamps.stamp(typeIndex, entity.index).isZero else { return false }
        column.set(value, at: entity.index)
        // Critical, whatever the type's tier: the value commits with its operation and stamp.
        if column.markDirty(entity.index, tier: .critical) {
            tracker.noteColumnDirty(.critical, typeIndex: column.typeIndex, clock: clock)
        }
        let record = records[Int(entity.index)]
        let operation = operationLog.append(
            kind: ReplicatedOperation.componentKind,
            payload: ReplicatedOperation.component(entity: record.id, type: C.typeName, version: C.payloadVersion,
                                                   payload: Self.encoded(value)[...], isDefault: true).encoded())
        setStamp(.ofDefault(node: operation.node), typeIndex: typeIndex, type: C.typeName, of: entity)
        noteLogged(1)
        return true
    }
}

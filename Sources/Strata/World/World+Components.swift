extension World {
    /// Inserts or replaces the entity's `C`, marking it dirty. False if the entity is dead.
    @inlinable
    @discardableResult
    public func insert<C: Component>(_ value: C, for entity: Entity) -> Bool {
        owner.check("World")
        guard isAlive(entity) else { return false }
        let column = column(C.self)
        column.set(value, at: entity.index)
        markDirty(column, entity.index)
        return true
    }

    /// Inserts or replaces `value` only if it differs from the current one
    /// (bevy's `set_if_neq`): an equal value is neither stored nor marked dirty.
    /// Returns true if the value changed.
    @inlinable
    @discardableResult
    public func setIfChanged<C: Component>(_ value: C, for entity: Entity) -> Bool {
        owner.check("World")
        guard isAlive(entity) else { return false }
        let column = column(C.self)
        if let d = column.denseIndex(entity.index), column.values[d] == value { return false }
        column.set(value, at: entity.index)
        markDirty(column, entity.index)
        return true
    }

    /// The entity's `C`, if it has one.
    @inlinable
    public func get<C: Component>(_ type: C.Type, for entity: Entity) -> C? {
        owner.check("World")
        guard isAlive(entity) else { return nil }
        let column = column(C.self)
        return column.denseIndex(entity.index).map { column.values[$0] }
    }

    /// Mutates the entity's `C` in place and marks it dirty; nil if it has none.
    ///
    /// The change is marked whether or not `body` changes the value; use
    /// ``setIfChanged(_:for:)`` to skip equal values.
    @inlinable
    @discardableResult
    public func mutate<C: Component, R>(_ type: C.Type, of entity: Entity, _ body: (inout C) throws -> R) rethrows -> R? {
        owner.check("World")
        guard isAlive(entity) else { return nil }
        let column = column(C.self)
        guard let d = column.denseIndex(entity.index) else { return nil }
        let result = try body(&column.values[d])
        markDirty(column, entity.index)
        return result
    }

    /// Removes the entity's `C` (its row is deleted at the tier's next flush) and returns it.
    @inlinable
    @discardableResult
    public func remove<C: Component>(_ type: C.Type, from entity: Entity) -> C? {
        owner.check("World")
        guard isAlive(entity) else { return nil }
        let column = column(C.self)
        guard let removed = column.remove(at: entity.index) else { return nil }
        markDirty(column, entity.index)
        return removed
    }

    /// Whether the entity has a `C`.
    @inlinable
    public func has<C: Component>(_ type: C.Type, _ entity: Entity) -> Bool {
        isAlive(entity) && column(C.self).denseIndex(entity.index) != nil
    }

    /// Number of entities that have a `C`.
    @inlinable
    public func count<C: Component>(of type: C.Type) -> Int { column(C.self).count }

    /// Calls `body` for every entity that has a `C`, with its value.
    @inlinable
    public func forEach<C: Component>(_ type: C.Type, _ body: (Entity, C) throws -> Void) rethrows {
        owner.check("World")
        let column = column(C.self)
        for d in column.values.indices {
            let index = column.owners[d]
            try body(Entity(index: index, generation: records[Int(index)].generation), column.values[d])
        }
    }

    /// The entities that have a `C`, with their values (a snapshot).
    /// (Inlinable, so it is specialized for `C` where it is called: unspecialized, a host
    /// listing its million shapes at open spent 0.1 s in `C`'s metadata.)
    @inlinable
    public func entities<C: Component>(with type: C.Type) -> [(entity: Entity, value: C)] {
        var result: [(entity: Entity, value: C)] = []
        result.reserveCapacity(count(of: type))
        forEach(type) { result.append(($0, $1)) }
        return result
    }

    /// Marks a key dirty without changing it, through its type-erased column (the
    /// maintenance rewrite of older payloads); nothing if the entity has no such value.
    func markDirty(column: Int, entityIndex: UInt32) {
        let target = columns[column]
        let tierOfType = target.componentType.tier
        // A hooked column's row may be more than its values (a replica state is also the stamps).
        let present = target.denseIndex(entityIndex) != nil || persistence(ofColumn: column)?.hasRow(entityIndex, in: self) == true
        guard tierOfType != .ephemeral, present else { return }
        let tier: Tier = records[Int(entityIndex)].spawnPending ? .critical : tierOfType
        if target.markDirty(entityIndex, tier: tier) {
            tracker.noteColumnDirty(tier, typeIndex: target.typeIndex, clock: clock)
        }
    }

    /// Sets the key's dirty bit and queues it for its tier: the critical tier while the
    /// entity's spawn is pending, the type's tier otherwise; never for ephemeral types.
    /// A replicated type's key also gets its replica bit: the next critical drain logs
    /// it as an operation (`World+Replicate.swift`).
    @inlinable @inline(__always)
    func markDirty<C: Component>(_ column: ComponentColumn<C>, _ entityIndex: UInt32) {
        guard C.tier != .ephemeral else { return }
        let tier: Tier = records[Int(entityIndex)].spawnPending ? .critical : C.tier
        if column.markDirty(entityIndex, tier: tier) {
            tracker.noteColumnDirty(tier, typeIndex: column.typeIndex, clock: clock)
        }
        if C.replication != .local {
            let queued = column.markReplicaDirty(entityIndex)
            if queued == 1 {
                tracker.noteReplicaDirty(typeIndex: column.typeIndex, clock: clock)
            } else if queued >= Self.replicatedBacklog {
                tracker.replicaBacklog = true
            }
        }
    }
}

extension World {
    /// A row for every live entity, into `batch`. Nothing is marked or cleared.
    ///
    /// For a document written from scratch (a corrupt file replaced while running:
    /// ``BatchSection/carryOver(from:into:world:)``). Every spawn must have been drained
    /// first, so that no entity row is written twice. Tick thread; O(entities).
    func snapshotEntities(into batch: WriteBatch) {
        owner.check("World")
        precondition(tracker.spawns.isEmpty, "drain the spawns before a snapshot")
        batch.entityInserts.reserveCapacity(batch.entityInserts.count + entityCount)
        for record in records where record.alive {
            batch.entityInserts.append(EntityInsert(number: record.number, id: record.id))
        }
    }

    /// A write of every component of the critical and derived tiers, as they are now, into
    /// `batch`. The dirty keys stay dirty (and drain as usual). Tick thread; O(components).
    func snapshotComponents(into batch: WriteBatch) {
        owner.check("World")
        records.withUnsafeBufferPointer { records in
            for column in columns where column.componentType.tier != .ephemeral {
                persistedWrites(of: column, records: records, into: &batch.writes)
            }
        }
    }
}

extension World {
    /// Every value of `column` as a write, as stored: the replica states whole, built from
    /// the stamp table (`World+ReplicaStates.swift`), the other columns' values as they are.
    func persistedWrites(of column: any AnyComponentColumn, records: UnsafeBufferPointer<EntityRecord>,
                         into writes: inout [ComponentWrite]) {
        if let hook = persistence(ofColumn: Int(column.typeIndex)) {
            hook.snapshot(self, records: records, into: &writes)
        } else {
            column.snapshot(records: records, into: &writes)
        }
    }
}

extension ComponentColumn {
    /// Every value of the column as a write, by its entity's number. Unspecialized (a
    /// recovery path, not a tick's).
    @usableFromInline
    func snapshot(records: UnsafeBufferPointer<World.EntityRecord>, into writes: inout [ComponentWrite]) {
        writes.reserveCapacity(writes.count + values.count)
        for (dense, value) in values.enumerated() {
            let record = records[Int(owners[dense])]
            writes.append(ComponentWrite(entity: record.number, typeIndex: typeIndex, typeName: typeName, value: value))
        }
    }
}

extension World {
    /// Moves `tier`'s dirty keys into `batch`, copying each key's *current* value.
    ///
    /// Coalescing is free: however often a key changed, it is one write. Keys whose
    /// dirty bit is already clear (stale or duplicate) are skipped. A derived drain
    /// leaves alone the keys of entities whose spawn has not been drained yet: those
    /// travel with the spawn in the critical batch.
    ///
    /// Tick thread. O(dirty keys), independent of the number of entities.
    func drain(_ tier: Tier, into batch: inout WriteBatch) {
        owner.check("World")
        precondition(tier != .ephemeral, "the ephemeral tier is never drained")
        if let first = tracker.firstDirty(tier) {
            batch.oldestChange = batch.oldestChange.map { min($0, first) } ?? first
        }
        batch.tiers.insert(tier)
        if tier == .critical { batch.durability = .full }
        tracker.drain(tier) { keys, spawns, despawns in
            batch.entityDeletes.append(contentsOf: despawns)
            for spawn in spawns {
                let i = Int(spawn.entity.index)
                // A spawn cancelled by a despawn has a newer generation in its slot.
                guard records[i].generation == spawn.entity.generation, records[i].alive else { continue }
                records[i].spawnPending = false
                batch.entityInserts.append(spawn.id)
            }
            batch.writes.reserveCapacity(batch.writes.count + keys.count)
            for key in keys {
                let column = columns[Int(key.typeIndex)]
                guard column.isDirty(key.entityIndex) else { continue }
                let record = records[Int(key.entityIndex)]
                if tier != .critical && record.spawnPending { continue }
                column.clearDirty(key.entityIndex)
                batch.writes.append(ComponentWrite(
                    entity: record.id,
                    typeIndex: key.typeIndex,
                    typeName: column.componentType.typeName,
                    value: column.boxedValue(key.entityIndex)))
            }
        }
    }
}

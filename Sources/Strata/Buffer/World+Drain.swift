extension World {
    /// Moves `tier`'s dirty keys into `batch`, copying each key's *current* value.
    ///
    /// Coalescing is free: however often a key changed, it is one write. Entries whose
    /// dirty bit is already clear (stale or duplicate) are skipped. A derived drain
    /// leaves alone the keys of entities whose spawn has not been drained yet: those
    /// travel with the spawn in the critical batch.
    ///
    /// Tick thread. O(dirty keys), independent of the number of entities; one dynamic
    /// call per dirty column. `now` (the world's clock if nil) is recorded as the
    /// tier's drain instant. A critical drain takes the vector clock's moved rows along
    /// when `withClock` (``VectorClockTrigger``).
    func drain(_ tier: Tier, into batch: WriteBatch, at now: Instant? = nil, withClock: Bool = false) {
        owner.check("World")
        precondition(tier != .ephemeral, "the ephemeral tier is never drained")
        let now = now ?? clock.now()
        if tier == .critical { batch.criticalDrainedAt = now } else { batch.derivedDrainedAt = now }
        // Replicated changes become operations first: they are critical work of this drain.
        if tier == .critical, !tracker.replicaColumns.isEmpty || !replicas.loggedAhead.writes.isEmpty { logReplicatedChanges(into: batch) }
        if tier == .critical { replicas.appliedSinceDrain = 0 }
        if tier == .critical {
            // FULL (one WAL fsync) only for critical work: draining an empty critical tier
            // alongside derived keys must not cost a sync.
            if tracker.firstDirty(.critical) != nil { batch.durability = .full }
            // The vector clock goes with the drains that ask for it, whether or not anything
            // else was queued: rows an earlier drain left for it wait there.
            if tracker.criticalExtras || withClock { drainCriticalExtras(into: batch, withClock: withClock) }
        }
        tracker.reset(tier, swappingColumnsInto: &drainScratch)
        if !drainScratch.isEmpty {
            records.withUnsafeBufferPointer { records in
                var context = ColumnDrainContext(tier: tier, records: records, writes: [])
                swap(&context.writes, &batch.writes)
                withUnsafeMutablePointer(to: &context) { context in
                    for typeIndex in drainScratch {
                        let target = drainTargets[Int(typeIndex)]
                        if let hook = target.hook {   // its values are not all of its rows
                            hook.drain(self, records: records, into: &context.pointee.writes)
                        } else {
                            target.type._strataDrain(target.column, UnsafeMutableRawPointer(context))
                        }
                    }
                }
                swap(&context.writes, &batch.writes)
            }
            drainScratch.removeAll(keepingCapacity: true)
        }
    }

    /// The critical work that is not component keys, section by section
    /// (``BatchSection/drainCritical(from:into:withClock:)``), and the requests riding it.
    private func drainCriticalExtras(into batch: WriteBatch, withClock: Bool) {
        for section in BatchSection.allCases { section.drainCritical(from: self, into: batch, withClock: withClock) }
        if !riders.isEmpty {
            for rider in riders { batch.durability = max(batch.durability, rider.durability) }
            batch.riders.append(contentsOf: riders)
            riders.removeAll()
        }
    }

    /// The spawns' entity rows (``BatchSection/entityInserts``): those entities are now
    /// persisted, so their other tiers' keys may be drained.
    func drainSpawns(into batch: WriteBatch) {
        for spawn in tracker.spawns {
            let i = Int(spawn.entity.index)
            // A spawn cancelled by a despawn has a newer generation in its slot.
            guard records[i].generation == spawn.entity.generation, records[i].alive else { continue }
            records[i].spawnPending = false
            batch.entityInserts.append(EntityInsert(number: records[i].number, id: spawn.id))
        }
    }
}

/// Room made ahead for entities a reload or a pull is about to add. Tick thread (or the
/// opening thread, before the world is handed over).
extension World {
    /// A cache hint for the id index's cell of the id `words` (``World/prefetch(ahead:of:)``).
    func prefetchIndexCell(_ words: (UInt64, UInt64)) { indexByID.prefetch(words) }

    /// Makes room for `count` more entities at once (a reload knows how many are coming, a
    /// pull how many operations):
    /// the id index is not rehashed, nor the records regrown, on the way. Grows at least
    /// twofold when it grows at all: a pull calls this at every end of tick with a little
    /// more to come, and an exact size would copy every record (and rehash the index) each time.
    func reserveEntities(_ count: Int) {
        let records = records.count + count
        if records > self.records.capacity { self.records.reserveCapacity(max(records, 2 * self.records.capacity)) }
        indexByID.reserveCapacity(indexByID.count + count, ids: { self.records[Int($0)].id })
        // Pulled entities carry replicated values, stamps and a stored state's dirty bit.
        guard !replicas.stamps.order.isEmpty else { return }
        replicas.stamps.reserve(slots: records)
        for (typeIndex, _) in replicas.stamps.order { columns[Int(typeIndex)].reserveSlots(records) }
        for hook in persistenceHooks { hook.reserve(slots: records, in: self) }
    }
}

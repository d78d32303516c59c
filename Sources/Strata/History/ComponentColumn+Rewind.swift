/// A column made equal to the same column of a world rebuilt from the past (a rewind).
/// Tick thread.
extension ComponentColumn {
    @usableFromInline
    func adopt(_ past: AnyComponentColumn, of pastWorld: World, in world: World) -> (set: Int, removed: Int) {
        guard let past = past as? ComponentColumn<C> else { return (0, 0) }
        var set = 0, removed = 0
        // Values the past did not have go (a copy of the owners: removal reorders them).
        for index in owners {
            let id = world.records[Int(index)].id
            guard let then = pastWorld.entity(for: id), past.denseIndex(then.index) != nil else {
                remove(at: index)
                world.markDirty(self, index)
                removed += 1
                continue
            }
        }
        for (d, pastIndex) in past.owners.enumerated() {
            let id = pastWorld.records[Int(pastIndex)].id
            guard let now = world.entity(for: id) else { continue }
            let value = past.values[d]
            if let current = denseIndex(now.index), values[current] == value { continue }
            self.set(value, at: now.index)
            world.markDirty(self, now.index)
            set += 1
        }
        return (set, removed)
    }
}

/// What a rewind changed.
public struct RewindReport: Sendable, Equatable, CustomStringConvertible {
    /// The time rewound to (Unix ms).
    public var toMilliseconds: Int64
    public var spawned = 0
    public var despawned = 0
    /// Component values set to what they were, and removed (they did not exist then).
    public var set = 0
    public var removed = 0

    public var description: String {
        "rewound to \(HistoryError.format(toMilliseconds)): \(despawned) entities despawned, \(spawned) spawned again, "
            + "\(set) values set back, \(removed) removed"
    }
}

/// A world made equal to one rebuilt from the past, as ordinary changes: they are marked
/// dirty and flushed by their tiers (durable, in the history themselves, and replicated for
/// replicated types). Ephemeral values stay as they are. Tick thread.
extension World {
    /// Makes the persisted state equal `past`'s (a world of the same component types, from
    /// ``HistoryReader/world(at:types:_:logger:)``): entities it did not have are despawned,
    /// entities it had are spawned again with their ids, values set back or removed.
    func adopt(_ past: World, into report: inout RewindReport) {
        var gone: [Entity] = []
        for index in records.indices where records[index].alive {
            if past.entity(for: records[index].id) == nil {
                gone.append(Entity(index: UInt32(index), generation: records[index].generation))
            }
        }
        for entity in gone where despawn(entity) { report.despawned += 1 }
        for index in past.records.indices where past.records[index].alive {
            let id = past.records[index].id
            if entity(for: id) == nil {
                _ = spawnUnchecked(id: id)
                report.spawned += 1
            }
        }
        // The replicas' stamps stay: what was applied stays applied (a value set back is
        // logged with a new stamp, and wins on every device).
        for column in columns where column.componentType.tier != .ephemeral && column.componentType.typeName != ReplicaState.typeName {
            // The past world registers every type of this one.
            guard let pastIndex = past.columnByName[column.componentType.typeName] else { continue }
            let changed = column.adopt(past.columns[pastIndex], of: past, in: self)
            report.set += changed.set
            report.removed += changed.removed
        }
    }
}

extension WriteBatch {
    /// The rows of the batch in the order a commit applies them (entity deletes, entity
    /// inserts, settings, operations, vector-clock rows, acknowledgements, replayed
    /// rejections, component writes), `range` of them as a batch of their own. Committing the slices of a
    /// partition in order is committing the batch: an entity's insert always precedes its
    /// writes. The writer uses it to isolate the rows an error rejects (`Writer+Rejection.swift`).
    func slice(_ range: Range<Int>) -> WriteBatch {
        let part = WriteBatch()
        var offset = 0
        func take<T>(_ rows: [T], into target: inout [T]) {
            let lower = min(max(range.lowerBound - offset, 0), rows.count)
            let upper = min(max(range.upperBound - offset, 0), rows.count)
            if lower < upper { target.append(contentsOf: rows[lower ..< upper]) }
            offset += rows.count
        }
        take(entityDeletes, into: &part.entityDeletes)
        take(entityInserts, into: &part.entityInserts)
        take(settingWrites, into: &part.settingWrites)
        take(operations, into: &part.operations)
        var clock: [(key: NodeID, value: Int64)] = []
        take(vectorClockRows.sorted { $0.key.description < $1.key.description }, into: &clock)
        for (node, seq) in clock { part.vectorClockRows[node] = seq }
        take(peerAcks, into: &part.peerAcks)
        take(replayedRejections, into: &part.replayedRejections)
        take(writes, into: &part.writes)
        part.durability = durability
        part.reasons = reasons
        part.sequence = sequence
        part.criticalDrainedAt = criticalDrainedAt
        part.derivedDrainedAt = derivedDrainedAt
        return part
    }
}

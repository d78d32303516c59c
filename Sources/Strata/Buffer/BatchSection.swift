/// The kinds of rows a batch carries, in the order a commit applies them. This list is
/// the one statement of that order, and every consumer of a batch handles each section in
/// an exhaustive switch, so a new section is a compile error until each does: counted and
/// sliced (here), merged and emptied (`BatchSection+Merge.swift`), waiting in the world and
/// drained (`BatchSection+World.swift`), parked when a commit refuses them
/// (`BatchSection+Rejection.swift`), carried over when a corrupt file is replaced
/// (`BatchSection+StoreReplacement.swift`), and counted in the metrics (by its ``DataKind``).
/// The writer's parts (``BatchPart/sections``) write in this order; `BatchSectionTests`
/// fails if they disagree. Rows may refer only to rows of an earlier section (an entity's
/// insert precedes its components' writes), so committing the slices of a batch in order is
/// committing the batch.
///
/// Kinds of data that do not ride batches (jobs, assets, the sync state) are written
/// through the request lane (``WriterLane``) and have no section; every kind, batched or
/// not, is a ``DataKind``.
enum BatchSection: CaseIterable {
    case entityDeletes, entityInserts, settings, operations, vectorClock, peerAcks, replayedRejections, components

    /// The kind of data its rows belong to.
    var kind: DataKind {
        switch self {
        case .entityDeletes, .entityInserts, .components: .world
        case .settings: .settings
        case .operations, .vectorClock, .peerAcks: .operations
        case .replayedRejections: .rejectedWrites
        }
    }

    /// Rows of this section in `batch` (component writes a merge set aside included).
    func count(in batch: WriteBatch) -> Int {
        switch self {
        case .entityDeletes: batch.entityDeletes.count
        case .entityInserts: batch.entityInserts.count
        case .settings: batch.settingWrites.count
        case .operations: batch.operations.count
        case .vectorClock: batch.vectorClockRows.count
        case .peerAcks: batch.peerAcks.count
        case .replayedRejections: batch.replayedRejections.count
        case .components: batch.writes.count + batch.mergedWrites.count
        }
    }

    /// Appends the rows `range` of this section of `batch` (a coalesced one) to `part`.
    func copy(_ range: Range<Int>, of batch: WriteBatch, into part: WriteBatch) {
        switch self {
        case .entityDeletes: part.entityDeletes += batch.entityDeletes[range]
        case .entityInserts: part.entityInserts += batch.entityInserts[range]
        case .settings: part.settingWrites += batch.settingWrites[range]
        case .operations: part.operations += batch.operations[range]
        case .vectorClock:
            for (node, seq) in batch.vectorClockRows.sorted(by: { $0.key.description < $1.key.description })[range] {
                part.vectorClockRows[node] = seq
            }
        case .peerAcks: part.peerAcks += batch.peerAcks[range]
        case .replayedRejections: part.replayedRejections += batch.replayedRejections[range]
        case .components: part.writes += batch.writes[range]
        }
    }
}

extension WriteBatch {
    /// Every row of the batch, section by section.
    var rowCount: Int {
        BatchSection.allCases.reduce(0) { $0 + $1.count(in: self) }
    }

    var isEmpty: Bool {
        riders.isEmpty && BatchSection.allCases.allSatisfy { $0.count(in: self) == 0 }
    }

    /// The rows of the batch in ``BatchSection`` order, `range` of them as a batch of their
    /// own. Committing the slices of a partition in order is committing the batch. The
    /// writer uses it to isolate the rows an error rejects (`Writer+Rejection.swift`).
    func slice(_ range: Range<Int>) -> WriteBatch {
        coalesce()   // writes a merge set aside count as rows: fold them in first
        let part = WriteBatch()
        var offset = 0
        for section in BatchSection.allCases {
            let count = section.count(in: self)
            let lower = min(max(range.lowerBound - offset, 0), count)
            let upper = min(max(range.upperBound - offset, 0), count)
            if lower < upper { section.copy(lower ..< upper, of: self, into: part) }
            offset += count
        }
        part.durability = durability
        part.reasons = reasons
        part.sequence = sequence
        part.criticalDrainedAt = criticalDrainedAt
        part.derivedDrainedAt = derivedDrainedAt
        return part
    }
}

/// How each section of a newer batch folds into an older one that still waits in the
/// hand-off (``WriteBatch/merge(newer:)``), and how a batch is emptied for reuse. Tick
/// thread (a merge holds the hand-off's lock: O(newer) per section).
extension BatchSection {
    /// Folds `newer`'s rows of this section into `batch`, as if both committed in order.
    /// `cancelled`: entities `batch` inserted and `newer` despawned (neither reaches the file).
    func merge(_ newer: WriteBatch, into batch: WriteBatch, cancelledInserts cancelled: Set<EntityNumber>) {
        switch self {
        case .entityDeletes:
            batch.entityDeletes += cancelled.isEmpty ? newer.entityDeletes : newer.entityDeletes.filter { !cancelled.contains($0) }
        case .entityInserts:
            batch.entityInserts += newer.entityInserts
        case .settings:
            // One write per key: the newer replaces the older in place.
            for write in newer.settingWrites {
                if let i = batch.settingWrites.firstIndex(where: { $0.key == write.key }) {
                    batch.settingWrites[i] = write
                } else {
                    batch.settingWrites.append(write)
                }
            }
        case .operations:
            batch.operations += newer.operations   // never coalesced: each is a row
        case .vectorClock:
            batch.vectorClockRows.merge(newer.vectorClockRows) { _, newest in newest }
        case .peerAcks:
            batch.peerAcks += newer.peerAcks   // applied as a maximum: order does not matter
        case .replayedRejections:
            batch.replayedRejections += newer.replayedRejections
        case .components:
            batch.setAside(writesOf: newer)   // folded by `coalesce()` on the writer thread
        }
    }

    /// Empties this section of `batch`, keeping the storage's capacity.
    func removeAll(in batch: WriteBatch) {
        switch self {
        case .entityDeletes: batch.entityDeletes.removeAll(keepingCapacity: true)
        case .entityInserts: batch.entityInserts.removeAll(keepingCapacity: true)
        case .settings: batch.settingWrites.removeAll(keepingCapacity: true)
        case .operations: batch.operations.removeAll(keepingCapacity: true)
        case .vectorClock: batch.vectorClockRows.removeAll(keepingCapacity: true)
        case .peerAcks: batch.peerAcks.removeAll(keepingCapacity: true)
        case .replayedRejections: batch.replayedRejections.removeAll()
        case .components:
            batch.writes.removeAll(keepingCapacity: true)
            batch.dropSetAsideWrites()
        }
    }
}

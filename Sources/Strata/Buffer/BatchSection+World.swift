/// How each section's rows wait in the world and leave it: what a critical drain moves
/// into a batch (``World/drain(_:into:at:withClock:)``) and how many rows wait for it
/// (``World/pendingCount(_:)``). Tick thread.
///
/// A new section is a compile error here until it says where its rows wait.
extension BatchSection {
    /// Rows of this section waiting in `world` for the next critical drain. Component
    /// keys wait per tier in their columns and are counted there.
    func pending(in world: World) -> Int {
        switch self {
        case .entityDeletes: world.tracker.despawns.count
        case .entityInserts: world.tracker.spawns.count
        case .settings: world.pendingSettings.count
        case .operations: world.operationLog.pending.count
        case .vectorClock: 0   // moves with the operations it covers
        case .peerAcks: world.operationLog.pendingAckCount
        case .replayedRejections: 0   // put straight into the engine's next batch by the replay
        case .components: 0
        }
    }

    /// Moves this section's waiting rows from `world` into `batch` (a critical drain).
    /// `withClock`: the vector clock's moved rows go too (``VectorClockTrigger``). The
    /// component keys are drained per tier, by their dirty columns.
    func drainCritical(from world: World, into batch: WriteBatch, withClock: Bool) {
        switch self {
        case .entityDeletes:
            if !world.tracker.despawns.isEmpty { batch.entityDeletes.append(contentsOf: world.tracker.despawns) }
        case .entityInserts: world.drainSpawns(into: batch)
        case .settings: world.drainSettings(into: batch)
        case .operations: world.operationLog.drainOperations(into: batch)
        case .vectorClock: if withClock { world.operationLog.drainClock(into: batch) }
        case .peerAcks: world.operationLog.drainAcks(into: batch)
        case .replayedRejections, .components: break
        }
    }
}

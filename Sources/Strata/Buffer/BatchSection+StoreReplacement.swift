/// What a corrupt file's replacement (`Engine+StoreReplacement.swift`) writes of each
/// section. The new file starts from what the salvage copied out of the damaged one (the
/// operation log, settings, parked rows: ``Salvage/copyHistory(from:into:logger:)``); the
/// replacement then commits ONE batch built here, section by section, from the world in
/// memory (the newest copy of everything it holds) and from `held`, the batches that were
/// waiting when the file was found corrupt (what the world no longer holds).
///
/// A new section is a compile error here until it says which: the one place where a
/// waiting row could otherwise be dropped without a word. `StoreReplacementTests` fills
/// every section and replaces the store.
extension BatchSection {
    /// Adds this section's rows of the replacement batch to `whole`. Tick thread.
    func carryOver(from held: WriteBatch, into whole: WriteBatch, world: World) {
        switch self {
        case .entityDeletes:
            break   // the new file has no rows to delete: a dead entity is simply not written
        case .entityInserts:
            world.snapshotEntities(into: whole)
        case .components:
            world.snapshotComponents(into: whole)
        case .settings:
            // The world's settings, and the removals that waited: the salvage copied the
            // damaged file's settings, so a removal not carried over would bring one back.
            var settings: [String: SettingValue?] = [:]
            for write in held.settingWrites { settings[write.key] = write.value }
            for (key, value) in world.settings { settings[key] = value }
            whole.settingWrites = settings.sorted { $0.key < $1.key }.map { SettingWrite(key: $0.key, value: $0.value) }
        case .operations:
            whole.operations = held.operations   // the world keeps no logged operation
        case .vectorClock:
            whole.vectorClockRows = world.operationLog.vectorClock   // the whole clock, as it is now
        case .peerAcks:
            whole.peerAcks = held.peerAcks
        case .replayedRejections:
            whole.replayedRejections = held.replayedRejections   // parked rows the salvage copied back
        }
    }
}

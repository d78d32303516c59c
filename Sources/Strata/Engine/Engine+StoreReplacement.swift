import Foundation
import GRDB
import Logging

/// Corruption found while running: a commit, a checkpoint or a compaction step fails
/// with SQLITE_CORRUPT (or SQLITE_NOTADB), or the idle integrity check finds damage.
/// The world in memory is then the newest copy of the document, so the file is replaced
/// by a new one written from it, and the engine goes on. Tick thread.
///
/// The writer only reports it (``WriteBuffer/reportCorruption(_:)``) and stops: it
/// writes nothing more into the damaged file, and what it had not committed waits in the
/// hand-off, merged with later flushes. The tick thread learns of it from its next
/// submission (or from `flushNow`'s wait) and, in ``replaceCorruptStore(closing:)``:
///
/// 1. drains every tier, so that nothing the world holds is left out;
/// 2. closes the file and sets it aside as a repair at open does (`Recovery/Repair.swift`):
///    `PATH.repair` first, naming `PATH.corrupt-<time>`, then the file moved there;
/// 3. builds the new file under `PATH.salvage`, with the document's lock held: copies from
///    the damaged one what the world does not hold (the operation log and its tables, the
///    settings, parked rows, type ids and session counters: ``Salvage/copyHistory(from:into:logger:)``),
///    writes the whole world, every entity under its number, and everything the waiting
///    batches held beyond it (operations, acknowledgements, removed settings) in ONE
///    transaction (FULL), then the base rows of component types this build does not
///    register, for the entities that are still alive;
/// 4. renames it to `PATH` whole (synced), removes `PATH.repair`, opens it and starts a new
///    writer on it.
///
/// The tick that does it waits for it (O(world): one commit of every entity and
/// component; rare enough that a stall beats a second code path). If it fails (the disk
/// is full, the new file cannot be created), everything stays in memory and in the
/// hand-off and the next flush tries again, after a backoff. A process that dies in the
/// middle leaves `PATH.repair`: the next open finishes the repair from the set-aside file
/// (the world in memory died with the process), or keeps the new file if it was in place
/// (``Engine/open(config:components:logger:options:)``; `PATH.replacing`, which builds
/// before this one left, is still read there).
///
/// The document's owner lock is released while the old file is closed and taken again
/// for the build (and again by the new store): for those moments another process could
/// take it; the replacement then fails and is tried again.
extension Engine {
    /// A replacement that has not finished: where the damaged file went, and when to
    /// try again after a failed attempt.
    struct StoreReplacement {
        var corruption: StoreError
        var setAside: String?
        var failures = 0
        var retryAt: Instant?

        /// The engine's side: a replacement that has not finished yet (it failed, and is
        /// retried), and whether one is running (it is not re-entered from a wait on the writer).
        struct Progress {
            var pending: StoreReplacement?
            var running = false
        }
    }

    /// Replaces the corrupt file (see above). `closing`: the last chance (shutdown), so
    /// no backoff. Returns false if the file could not be replaced (yet).
    @discardableResult
    func replaceCorruptStore(closing: Bool = false) -> Bool {
        guard let corruption = buffer.reportedCorruption else { return true }
        guard options.replaceIfCorrupt else { return false }   // a tool's engine: left as it is
        guard !replacement.running else { return false }   // a wait inside the replacement itself
        replacement.running = true
        defer { replacement.running = false }
        var state = replacement.pending ?? StoreReplacement(corruption: corruption)
        if !closing, let retryAt = state.retryAt, clock.now() < retryAt { return false }
        writer.join()
        scheduler.drainAll(world: world, reasons: [.explicitSave], into: nextBatch)
        if nextBatch.isEmpty { nextBatch.reset() } else { buffer.submit(&nextBatch) }
        let held = buffer.takeWaiting() ?? WriteBatch()
        let location = store.location
        var fresh: Store?
        do {
            let storeOptions = Engine.storeOptions(config: config, options: options)
            let setAside: String
            if let earlier = state.setAside {
                setAside = earlier
                logger.notice("replacing \(location.path) again from \(setAside) and memory")
            } else {
                try? store.close()
                setAside = Repair.setAsideTarget(for: location)
            }
            // As a repair at open (`Recovery/Repair.swift`): the marker first, the damaged file
            // aside, the new one built under `PATH.salvage` with the document's lock held, and
            // renamed into place whole; a process that dies on the way leaves the marker, and
            // the next open finishes it from the set-aside file.
            let lock = try DocumentLock.acquire(for: location)
            defer { lock.release() }
            if state.setAside == nil {
                try Repair.write(Repair.Marker(original: setAside, cause: corruption.message, startedAt: unixMilliseconds()), for: location)
                try Repair.moveAside(location, to: setAside)
                state.setAside = setAside
                try? FileManager.default.removeItem(atPath: location.verifyMarkerPath)
            }
            var typeNames: [String] = []
            for type in world.componentTypes { typeNames.append(type.typeName) }
            let whole = wholeWorld(keeping: held)
            let segmentLog = SegmentLog()
            var typeIDs: [Int64?] = []
            let marker = Repair.Marker(original: setAside, cause: corruption.message, startedAt: unixMilliseconds())
            let salvage = try Repair.build(location, from: marker, options: storeOptions, lock: lock) { building in
                var salvage = Salvage.copyHistory(from: setAside, into: building, logger: logger)
                typeIDs = try building.queue.writeWithoutTransaction { db in
                    try db.execute(sql: "INSERT OR IGNORE INTO replica (id, node_id, created_at) VALUES (1, ?, ?)",
                                   arguments: [world.operationLog.node.withBytes { Data($0) }, unixMilliseconds()])
                    var ids: [Int64?] = []
                    for name in typeNames { ids.append(try ComponentTypeNames.intern(name, db)) }
                    return ids
                }
                // A writer of its own, never started: this thread owns the new file until it is in place.
                let filling = try Engine.makeWriter(config: config, options: options, store: building, buffer: buffer, recorder: recorder,
                                                    logger: logger, typeIDs: typeIDs, segmentLog: segmentLog, checkpointAtStart: false)
                try filling.commitWhole(whole)
                Salvage.copyForeignComponents(from: setAside, into: building, registered: Set(typeNames), logger: logger, &salvage)
                Salvage.dropOrphans(building, &salvage)
                return salvage
            }
            lock.release()   // the store takes it again
            let (store, _) = try Engine.openVerified(location, storeOptions)
            fresh = store
            let writer = try Engine.makeWriter(config: config, options: options, store: store, buffer: buffer, recorder: recorder,
                                               logger: logger, typeIDs: typeIDs, segmentLog: segmentLog, checkpointAtStart: false)

            let entities = whole.entityInserts.count
            let components = whole.writes.count
            buffer.didCommit(whole)
            buffer.clearCorruption()
            writer.setMaxWalBytes(scheduler.policy.maxWalBytes(power: powerState))
            if let writerConditions { writer.setConditions(writerConditions) }
            writer.start()
            self.store = store
            self.writer = writer
            replacement.pending = nil
            let report = "\(location.path) was corrupt (\(corruption.message)): moved to \(setAside); a new file holds the world in memory (\(entities) entities, \(components) components) and, of the rest, \(salvage.description)"
            recorder.update {
                $0.storeReplacements += 1
                $0.lastStoreReplacement = report
            }
            logger.error("\(report)")
            return true
        } catch {
            try? fresh?.close()
            buffer.putBack(held)
            state.failures += 1
            state.retryAt = clock.now() + config.writer.backoff.wait(after: state.failures)
            replacement.pending = state
            recorder.update { $0.lastWriteError = "replacing the corrupt file: \(error)" }
            logger.error("could not replace the corrupt \(location.path) (attempt \(state.failures)), everything stays in memory and is tried again: \(error)")
            return false
        }
    }

    /// One batch with the whole world and what `held` carries beyond the world's state,
    /// section by section (``BatchSection/carryOver(from:into:world:)``).
    private func wholeWorld(keeping held: WriteBatch) -> WriteBatch {
        let batch = WriteBatch()
        for section in BatchSection.allCases { section.carryOver(from: held, into: batch, world: world) }
        batch.riders = held.riders
        batch.durability = .full
        batch.reasons = held.reasons
        batch.criticalDrainedAt = held.criticalDrainedAt
        batch.derivedDrainedAt = held.derivedDrainedAt
        batch.sequence = buffer.lastSubmitted   // it stands for every batch handed off so far
        return batch
    }

    /// The error of an engine that must not replace a corrupt file (``Options/replaceIfCorrupt``).
    static func leftAsItIs(_ corruption: StoreError, path: String) -> StoreError {
        StoreError(.corrupt, sqliteCode: corruption.sqliteCode,
                   message: "\(corruption.message); the file is left as it is: `strata maintain --repair \(path)` (or opening it in the host, `strata sim --db \(path)`) sets it aside, salvages what still reads into a new file and reports what could not be",
                   path: path)
    }

    /// Shutdown could not replace the corrupt file: the world and what waited is parked
    /// in the side file (`PATH.rejected`), and the error says so.
    func parkAfterFailedReplacement() -> StoreError {
        let held = buffer.takeWaiting() ?? WriteBatch()
        let whole = wholeWorld(keeping: held)
        let cause = replacement.pending?.corruption
            ?? StoreError(.corrupt, message: "the file is corrupt", path: store.location.path)
        for rider in whole.riders { rider.finish(cause) }
        let parked = writer.parkInSideFile(writer.rejectedWrites(whole, error: cause, context: whole), because: cause)
        let riders = whole.riders.isEmpty ? "" : "; \(whole.riders.count) requests riding it (jobs queued with it) not written, each logged"
        let error = StoreError(.write, message: "the corrupt file could not be replaced: \(whole.rowCount) rows (the whole world), \(parked.summary)\(riders); the damaged file is \(replacement.pending?.setAside ?? store.location.path)", path: store.location.path)
        logger.critical("\(error)")
        return error
    }
}

extension Writer {
    /// Commits a batch on the calling thread before the writer starts, isolating and
    /// parking rows the database refuses (`Writer+Rejection.swift`). Throws if it could
    /// not commit all of it (the caller starts over).
    func commitWhole(_ batch: WriteBatch) throws {
        do {
            try commitRecorded(batch)
        } catch {
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            if storeError.isCorruption || Self.isTransient(storeError) { throw storeError }
            if isolateRejectedRows(batch, error: storeError) != nil { throw storeError }
        }
    }
}

import Foundation
import Logging
import Synchronization

/// The push side of the loop (``SyncClient``'s thread): the outbox in batches that grow
/// while full, a refused batch split until the refused operation is alone.
extension SyncClient {
    /// Pushes while the outbox has operations due.
    func pushAll() throws {
        guard let server else { return }
        if let readOnlyUntil, ContinuousClock.now < readOnlyUntil { return }
        while !shouldStop {
            let highest = localHighest.load(ordering: .acquiring)
            let due = lock.withLock { nextFailureDue.map { $0 <= wallClock() } ?? false }
            guard highest > pushedHighest || due else { return }
            let next = try outbox.next(limit: pushSize, now: wallClock(), backoff: { [config] in Self.backoff($0, config) })
            let batch = next.operations
            lock.withLock { nextFailureDue = nil }
            if !next.parked.isEmpty { parked(next.parked) }
            guard !batch.isEmpty else {
                // Only rows that do not read: past them now, what follows them is due.
                let before = pushedHighest
                pushedHighest = max(pushedHighest, next.parked.max() ?? 0)
                if pushedHighest > before { continue }
                // Nothing committed above what was pushed yet (the flush comes), or no retry due.
                let status = try outbox.status()
                pushedHighest = max(pushedHighest, status.pushedThrough)
                if let soonest = status.failing.map({ $0.lastAttemptAt + Int64(backoff($0.attempts).milliseconds) }).min() {
                    lock.withLock { nextFailureDue = min(nextFailureDue ?? soonest, soonest) }
                }
                return
            }
            do {
                try push(batch[...], to: server)
            } catch let error as SyncError where error.kind == .readOnly {
                readOnly(error)
                return
            }
            if readOnlyUntil != nil {
                readOnlyUntil = nil
                update { $0.readOnly = false; $0.lastError = nil }
                logger.notice("sync: the server takes this device's pushes again")
            }
            pushedHighest = max(pushedHighest, batch.map(\.seq).max() ?? 0)
            // A full batch: a backlog (back online, a large document's first push); the next
            // one is twice as large, up to `join_batch_size`.
            pushSize = batch.count == pushSize ? min(pushSize * 2, config.joinBatchSize) : config.batchSize
        }
    }

    /// Rows of this device's log that do not read were made dead letters by the outbox.
    private func parked(_ seqs: [Int64]) {
        let failing = (try? outbox.status()).map { $0.failing.count + $0.deadLetters.count }
        update { $0.failing = failing ?? $0.failing; $0.deadLetters += seqs.count }
        logger.error("sync: operation\(seqs.count == 1 ? "" : "s") \(seqs.map(String.init).joined(separator: ", ")) of this device: \(SyncOutbox.unreadableError); dead letters now (`strata sync status` lists them)")
    }

    /// A reader's push refused: nothing is lost or dead-lettered (the operations stay in the
    /// outbox), pulls go on, and pushing is tried again after `safety_pull_secs`.
    private func readOnly(_ error: SyncError) {
        readOnlyUntil = .now + config.safetyPull
        let highest = localHighest.load(ordering: .acquiring)
        update {
            if !$0.readOnly {
                self.logger.warning("sync: read-only: \(error.message); \($0.outbox(highest: highest)) operations of this device wait in the outbox, pulling goes on")
            }
            $0.readOnly = true
            $0.lastError = "read-only: \(error.message)"
        }
        try? outbox.noteError("read-only: \(error.message)", now: wallClock())
    }

    /// Pushes `batch`; a refused batch is split until the refused operations are alone.
    func push(_ batch: ArraySlice<LoggedOperation>, to server: SyncServerInfo) throws {
        do {
            let receipt = try call { try await self.transport.push(Array(batch)) }
            let acknowledgedThrough = try outbox.acknowledge(Array(batch), server: server, now: wallClock())
            update {
                $0.pushes += 1
                $0.pushedOperations += receipt.inserted
                $0.duplicatesIgnored += receipt.duplicates
                $0.lastPushAt = self.wallClock()
                if $0.firstPushAt == nil { $0.firstPushAt = $0.lastPushAt }
                $0.acknowledgedThrough = max($0.acknowledgedThrough, acknowledgedThrough)
            }
            inbox.acknowledge(through: acknowledgedThrough)
        } catch let error as SyncError where error.kind == .rejected {
            guard batch.count > 1 else {
                guard let operation = batch.first else { return }
                let dead = try outbox.refuse(operation, error: error.message, maxAttempts: config.maxAttempts, now: wallClock())
                let failing = (try? outbox.status()).map { $0.failing.count + $0.deadLetters.count }
                update { $0.refusals += 1; $0.failing = failing ?? $0.failing; if dead { $0.deadLetters += 1 } }
                lock.withLock { nextFailureDue = nextFailureDue ?? 0 }
                logger.warning("sync: the server refused operation \(operation.seq) (\(operation.kind))\(dead ? ": a dead letter now" : ""): \(error.message)")
                return
            }
            // In sequence order: the lower half settles first.
            let middle = batch.startIndex + batch.count / 2
            try push(batch[..<middle], to: server)
            try push(batch[middle...], to: server)
        }
    }
}

import Foundation
import GRDB
import GRDBSQLite
import Logging

/// How the writer's loop ends: the batches it cannot write parked, the requests failed or
/// handed on, the clean mark. Writer thread.
extension Writer {
    /// Shutdown cannot write what is waiting: park it in the side file, row by row, so
    /// that nothing is lost (``RejectedWrite``), and say so.
    func abandonWaiting(reason: String) {
        if case .batch(let batch) = buffer.take(for: .zero) {
            let cause = StoreError(.write, message: metrics.snapshot.lastWriteError ?? "unknown error", path: store.location.path)
            for rider in batch.riders { rider.finish(cause) }
            let parked = parkInSideFile(rejectedWrites(batch, error: cause, context: batch), because: cause)
            let derived = batch.writes.filter { $0.value.map { type(of: $0).tier == .derived } ?? false }.count
            let tiers = "\(batch.rowCount - derived) critical (entity rows, settings, operations, critical components, removals), \(derived) derived"
            // Requests that rode the batch (jobs queued from the tick thread) are not rows to
            // park: each failed above, and said so through its own log line.
            let riders = batch.riders.isEmpty ? "" : "; \(batch.riders.count) requests riding the batch (jobs queued with it) not written, each logged"
            let nothingLost = parked.lost == 0 && batch.riders.isEmpty ? ", nothing lost" : ""
            let error = StoreError(.write, message: "\(batch.rowCount) rows not written to the database (\(reason)): \(tiers); \(parked.summary)\(nothingLost)\(riders): \(cause.message)", path: store.location.path)
            logger.error("writer: \(error)")
            controlLock.withLock { shutdownError = error }
        }
    }

    func finish() {
        let corrupt = buffer.reportedCorruption != nil
        let skipMark = corrupt || controlLock.withLock { shutdownError != nil || abandoned }
        if !skipMark {
            do {
                maintenance.optimizeAtShutdown()
                try markCleanShutdown()
                checkpoint(.truncate)
            } catch {
                let storeError = StoreError(.write, wrapping: error, path: store.location.path)
                logger.error("writer: clean shutdown failed: \(storeError)")
                controlLock.withLock { shutdownError = storeError }
            }
        }
        if corrupt {
            buffer.putBack(deferredRequests)   // for the writer of the file that replaces this one
            deferredRequests.removeAll()
        } else {
            failRemainingRequests()
        }
        walFrames.uninstall(store: store)
        recordCPUTime()
        for task in tasks { task.writerFinished() }
        controlLock.withLock {
            state = .finished
            controlLock.broadcast()
        }
    }
}

import CoreMetrics
import Foundation
import GRDB
import Logging
import Synchronization

/// The end of a session: the clean shutdown, and the stop without one. Tick thread.
extension Engine {
    /// Clean shutdown: flushes every tier, stops the writer (which marks the session
    /// clean and truncates the WAL), and closes the database.
    ///
    /// - Throws: ``StoreError`` if the final writes failed; the session then stays
    ///   marked as running, and the next open reports a crash.
    public func shutdown() throws {
        owner.check("Engine")
        guard !isShutDown else { return }
        buffer.beginClosing()   // the writer's waits shorten now, before the workers are waited for
        stopWorkers()
        stopSync()
        scheduler.drainAll(world: world, reasons: [.shutdown], into: nextBatch)
        hand()
        isShutDown = true
        powerMonitor?.stop()
        memoryMonitor?.stop()
        stopMetricsExport()
        var error = writer.stop()
        if let corruption = buffer.reportedCorruption, !options.replaceIfCorrupt {
            error = Engine.leftAsItIs(corruption, path: store.location.path)
        } else if buffer.reportedCorruption != nil {
            // Found corrupt in the last moments: the new file gets everything, or it is parked.
            error = replaceCorruptStore(closing: true) ? writer.stop() : parkAfterFailedReplacement()
        }
        if error == nil { recorder.update { $0.cleanShutdownCount += 1 } }
        reportFinalMetrics()
        try? store.close()
        vfsLease?.close()
        if let error { throw error }
        logger.info("clean shutdown of \(store.location.path)")
    }

    /// Stops as a crash would: nothing more is drained, the session is not marked clean,
    /// and the next open reports a crash. Batches already handed to the writer are still
    /// committed (as they would be in the moments before a kill). For fault-injection
    /// harnesses (`strata torture`) and tests; a host calls ``shutdown()``.
    package func abandon() {
        owner.check("Engine")
        guard !isShutDown else { return }
        stopAsACrash()
    }
}

import CoreMetrics
import Foundation
import GRDB
import Logging
import Synchronization

/// Flush events and explicit saves. Tick thread.
extension Engine {
    /// A flush event (the specification, *Flush events*), by its reason's urgency:
    ///
    /// - major actions (stroke end, undo, redo, metadata change), operations from peers:
    ///   every tier within `critical_flush_delay_ms` (events in one window share one
    ///   commit), at a later ``endTick()``;
    /// - app transitions (background, low memory, explicit save, document switch):
    ///   every tier now, then a checkpoint. Handed off at once; the call does not wait
    ///   for the commit (``flushNow(reason:timeout:)`` does).
    public func flush(reason: FlushReason) {
        owner.check("Engine")
        guard !isShutDown else { return }
        switch reason.urgency {
        case .scheduled, .withinCriticalDelay:
            scheduler.request(reason, by: clock.now() + config.persistence.criticalFlushDelay)
        case .nowThenCheckpoint:
            scheduler.drainAll(world: world, reasons: [reason], into: nextBatch)
            nextBatch.checkpointAfter = true
            hand()
        }
    }

    /// Flushes every tier now and waits until the writer has committed it (and, for an
    /// app transition, checkpointed).
    ///
    /// For explicit saves and transitions that may precede termination. Blocks the
    /// calling thread for the commit (and anything queued before it).
    ///
    /// - Parameters:
    ///   - reason: why (counted in the metrics); an app transition also checkpoints.
    ///   - timeout: the longest wait. `nil` (the default) waits as long as the
    ///     commit takes (the first save of a large world can take most of a minute), but
    ///     not past a failed attempt: a commit that fails is retried by the writer with
    ///     backoff, so waiting for it could mean waiting for the disk to be freed.
    /// - Returns: true once committed; false if `timeout` passed first or an attempt
    ///   failed. Either way the batch stays queued and is committed later, nothing is
    ///   dropped, and the reason is logged as a warning.
    @discardableResult
    public func flushNow(reason: FlushReason = .explicitSave, timeout: Duration? = nil) -> Bool {
        owner.check("Engine")
        guard !isShutDown else { return true }
        scheduler.drainAll(world: world, reasons: [reason], into: nextBatch)
        nextBatch.checkpointAfter = reason.urgency == .nowThenCheckpoint
        hand()
        return waitForWriter(timeout: timeout)
    }

    /// The app is about to go to the background (iOS `applicationWillResignActive`;
    /// SIGTSTP in `strata sim`): flushes every tier and checkpoints, waiting at most
    /// `background_flush_timeout_secs`. Returns false if that was not enough.
    @discardableResult
    public func willEnterBackground() -> Bool {
        flushNow(reason: .background, timeout: config.persistence.backgroundFlushTimeout)
    }

    /// Waits until every batch handed off so far is committed (tests, explicit saves).
    /// If the file is found corrupt meanwhile, replaces it (the tick thread's work; the
    /// writer only reports it), then goes on waiting.
    ///
    /// - Parameter timeout: the longest wait; `nil`: until committed, or until a commit
    ///   attempt fails (the writer retries it with backoff).
    /// - Returns: false, with a warning logged, if the batches are not committed yet.
    @discardableResult
    public func waitForWriter(timeout: Duration? = .seconds(30)) -> Bool {
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0.seconds) }
        let failuresBefore = recorder.snapshot.failedCommits
        while true {
            // Without a deadline, look up every second whether an attempt failed.
            let slice = deadline ?? Date(timeIntervalSinceNow: 1)
            if buffer.waitForCommit(buffer.lastSubmitted, until: slice) { return true }
            if buffer.reportedCorruption != nil {
                if (deadline.map { Date() < $0 } ?? true), replaceCorruptStore() { continue }
                logger.warning("flush: not committed: the file was found corrupt and could not be replaced yet (the changes stay in memory)")
                return false
            }
            if let timeout, let deadline, Date() >= deadline {
                logger.warning("flush: not committed within \(timeout) (the batch stays queued; the writer commits it later)")
                return false
            }
            if deadline == nil, recorder.snapshot.failedCommits > failuresBefore {
                logger.warning("flush: a commit attempt failed (the batch stays queued and is retried; see the writer's warnings)")
                return false
            }
        }
    }
}

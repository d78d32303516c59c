import Foundation

/// The hand-off between the tick thread and the writer thread.
///
/// States of the single slot:
///
///     empty ──submit──▶ waiting ──take──▶ empty          (writer has the batch in flight)
///     waiting ──submit──▶ waiting (merged)                (writer is behind)
///     in flight ──putBack──▶ waiting (failed ⊕ waiting)  (a failed write keeps its batch)
///
/// Invariants:
/// 1. At most one batch waits; a submission while one waits merges into it
///    (``WriteBatch/merge(newer:)``), so memory is bounded by distinct keys and
///    critical work is never dropped.
/// 2. `submit` never waits for the writer: it holds the lock for O(batch) and returns.
/// 3. Sequences only grow; `committedSequence` is the newest batch known durable
///    in the database, so ``waitForCommit(_:until:)`` can serve `flushNow()`.
final class WriteBuffer: @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `lock`.
    private let lock = Lock()
    private var waiting: WriteBatch?
    private var lastSequence: UInt64 = 0
    private var committedSequence: UInt64 = 0
    private var closed = false

    enum Take {
        case batch(WriteBatch)
        case timedOut
        case closed
    }

    /// Queues `batch` for the writer; returns its sequence number, and whether it merged
    /// into a batch that was still waiting (the writer is behind). Tick thread.
    @discardableResult
    func submit(_ batch: WriteBatch) -> (sequence: UInt64, merged: Bool) {
        var batch = batch
        return lock.withLock {
            lastSequence += 1
            batch.sequence = lastSequence
            let merged = waiting != nil
            if merged {
                waiting!.merge(newer: batch)
            } else {
                waiting = batch
            }
            lock.broadcast()
            return (lastSequence, merged)
        }
    }

    /// Waits for a batch until `deadline`. Writer thread.
    func take(until deadline: Date?) -> Take {
        lock.withLock {
            while waiting == nil && !closed {
                if !lock.wait(until: deadline) { break }
            }
            if let batch = waiting {
                waiting = nil
                return .batch(batch)
            }
            return closed ? .closed : .timedOut
        }
    }

    /// Returns a failed batch to the front; anything submitted meanwhile merges into it.
    func putBack(_ failed: WriteBatch) {
        lock.withLock {
            var batch = failed
            if let newer = waiting { batch.merge(newer: newer) }
            waiting = batch
        }
    }

    /// Records that every batch up to `sequence` is in the database.
    func didCommit(_ sequence: UInt64) {
        lock.withLock {
            committedSequence = max(committedSequence, sequence)
            lock.broadcast()
        }
    }

    /// Waits until batch `sequence` is committed; false if `deadline` passed first.
    func waitForCommit(_ sequence: UInt64, until deadline: Date?) -> Bool {
        lock.withLock {
            while committedSequence < sequence {
                if !lock.wait(until: deadline) { return committedSequence >= sequence }
            }
            return true
        }
    }

    /// No more batches will be submitted: `take` returns `.closed` once the slot is empty.
    func close() {
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }

    var isClosed: Bool { lock.withLock { closed } }
    var lastSubmitted: UInt64 { lock.withLock { lastSequence } }
}

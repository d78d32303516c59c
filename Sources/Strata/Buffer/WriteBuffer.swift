import Foundation

/// The hand-off between the tick thread and the writer thread.
///
/// States of the single slot:
///
///     empty ──submit──▶ waiting ──take──▶ empty          (writer has the batch in flight)
///     waiting ──submit──▶ waiting + newer                 (writer is behind: queued)
///     in flight ──putBack──▶ waiting (failed ⊕ waiting ⊕ newer)  (a failed write keeps its batch)
///
/// Batches are recycled: the writer returns a committed batch, emptied with its
/// capacity kept, as a spare, and `submit` hands a spare back to the tick thread in
/// exchange for the batch it queues. In steady state a flush tick allocates nothing,
/// and the values of a committed batch are released on the writer thread.
///
/// Waking the writer is a system call (a futex wake), which costs microseconds on the
/// tick thread, more when its code has gone cold. So the writer, while batches keep
/// coming, looks at the slot every poll interval instead (``Writer``), and `submit`
/// wakes it only when it is *parked*: waiting for nothing but a wake.
///
/// Invariants:
/// 1. One batch waits, and up to ``queuedBatches`` newer ones queue behind it unmerged:
///    the writer merges them into it as it takes it (``WriteBatch/merge(newer:)``), on its
///    own thread and outside the lock, then coalesces it (``WriteBatch/coalesce()``). Past
///    that, a submission merges into the newest on the spot, so memory stays bounded by
///    distinct keys and critical work is never dropped. (Merged on the tick thread, a
///    large pull cost a fifth of the tick time in copies into the waiting batch.)
/// 2. `submit` never waits for the writer: it holds the lock for O(batch) and returns.
///    It wakes the writer only if the writer is parked; a polling writer finds the
///    batch within its poll interval (which the flush lookahead includes).
/// 3. Sequences only grow; `committedSequence` is the newest batch known durable
///    in the database, so ``waitForCommit(_:until:)`` can serve `flushNow()`.
/// 4. The spares are empty, and only the buffer refers to them.
/// 5. Once the writer reports the file corrupt (``reportCorruption(_:)``) it writes no
///    more: batches wait in the slot, merged, until the engine replaces the file and
///    takes them (`Engine+StoreReplacement.swift`). `submit` says so, and commit waiters
///    return, so the tick thread learns of it at its next flush at no extra cost.
final class WriteBuffer: @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `lock`.
    private let lock = Lock()
    private var waiting: WriteBatch?
    /// Submitted while `waiting` was there, oldest first, not merged into it yet.
    private var newer: [WriteBatch] = []
    private var spares: [WriteBatch] = []
    private var lastSequence: UInt64 = 0
    private var committedSequence: UInt64 = 0
    /// Where a shutdown is: batches still come while closing (``beginClosing()``), none once closed.
    private var stage = Stage.open
    private enum Stage: Comparable { case open, closing, closed }
    /// The writer is inside `take` or `pause`…
    private var writerWaiting = false
    /// … and will not look at the slot again until woken (or its checkpoint timer).
    private var writerParked = false
    /// Set by ``nudge()``: the writer's wait ends without a batch (it has other work).
    private var nudged = false
    private var commitWaiters = 0
    private var counts = FlushCounts()
    /// When the last batch was submitted: the phase of the tick thread's ticks.
    private var lastSubmitAt: Instant?
    /// Set by the writer when SQLite reports the file corrupt; cleared once a new file replaced it.
    private var corruption: StoreError?
    /// Work other threads handed the writer (``WriterRequest``), in order.
    private var requests: [WriterRequest] = []
    /// Who is told of commits, and what waiting callers ask (`WriteBuffer+Hooks.swift`).
    let hooks = WriteBufferHooks()

    enum Take {
        case batch(WriteBatch)
        /// Every request waiting, to run in one group commit.
        case requests([WriterRequest])
        case timedOut
        case closed
    }

    /// Queues `batch` for the writer and leaves an empty batch in its place (the
    /// writer's spares, or a new one) for the next flush to fill. Returns the batch's
    /// sequence number, whether it merged into a batch that was still waiting (the
    /// writer is behind), and whether the writer has stopped on a corrupt file. Tick thread.
    @discardableResult
    func submit(_ batch: inout WriteBatch, at now: Instant? = nil) -> (sequence: UInt64, merged: Bool, corrupt: Bool) {
        lock.withLock {
            if let now { lastSubmitAt = now }
            lastSequence += 1
            batch.sequence = lastSequence
            let merged = waiting != nil
            counts.record(batch.reasons, merged: merged)
            if let newest = newer.last, newer.count >= Self.queuedBatches {
                newest.merge(newer: batch)
                batch.reset()
            } else {
                if merged { newer.append(batch) } else { waiting = batch }
                batch = spares.popLast() ?? WriteBatch()
            }
            if writerParked {
                counts.wakes += 1
                lock.broadcast()
            }
            return (lastSequence, merged, corruption != nil)
        }
    }

    /// What has been submitted so far.
    var flushCounts: FlushCounts { lock.withLock { counts } }

    /// Waits for a batch for at most `wait` (nil: until woken). `parked`: only a submission
    /// ends the wait early (the writer is not polling). The writer reads its own clock and
    /// says how long; the condition waits that long in real time. Writer thread.
    func take(for wait: Duration?, parked: Bool = true) -> Take {
        let deadline = wait.map { Date(timeIntervalSinceNow: max(0, $0.seconds)) }
        var queued: [WriteBatch] = []
        let taken = takeLocked(until: deadline, parked: parked, queued: &queued)
        if case .batch(let batch) = taken { fold(queued, into: batch) }   // the writer's now: no lock held
        return taken
    }

    /// Batches queued behind the waiting one, at most; a submission past them merges.
    static let queuedBatches = 4

    /// Merges `queued` into `batch`, oldest first, coalesces it, and keeps the emptied
    /// ones as spares. Outside the lock.
    private func fold(_ queued: [WriteBatch], into batch: WriteBatch) {
        for newer in queued {
            batch.merge(newer: newer)
            newer.reset()
        }
        batch.coalesce()
        guard !queued.isEmpty else { return }
        lock.withLock {
            for spare in queued where spares.count < Self.queuedBatches { spares.append(spare) }
        }
    }

    private func takeLocked(until deadline: Date?, parked: Bool, queued: inout [WriteBatch]) -> Take {
        lock.withLock {
            // A writer that reported the file corrupt is on its way out: nothing more for it.
            if corruption != nil { return .timedOut }
            writerWaiting = true
            writerParked = parked
            defer {
                writerWaiting = false
                writerParked = false
            }
            while waiting == nil && requests.isEmpty && stage != .closed && !nudged && corruption == nil {
                if !lock.wait(until: deadline) { break }
            }
            nudged = false
            if let batch = waiting, corruption == nil {
                waiting = nil
                swap(&queued, &newer)
                return .batch(batch)
            }
            if !requests.isEmpty && corruption == nil {
                defer { requests.removeAll() }
                return .requests(requests)
            }
            return stage == .closed ? .closed : .timedOut
        }
    }

    /// Queues work for the writer from any thread and wakes it. False once the buffer is
    /// closed (the engine is shutting down): the request will not run.
    @discardableResult
    func submit(_ request: WriterRequest) -> Bool {
        lock.withLock {
            guard stage != .closed else { return false }
            requests.append(request)
            if writerWaiting { lock.broadcast() }
            return true
        }
    }

    /// Returns requests the writer could not run (the file turned out corrupt) to the front.
    func putBack(_ returned: [WriterRequest]) {
        lock.withLock { requests.insert(contentsOf: returned, at: 0) }
    }

    /// The requests still waiting, taken (the writer, as it finishes, fails them).
    func takeRequests() -> [WriterRequest] {
        lock.withLock { () -> [WriterRequest] in
            defer { requests.removeAll() }
            return requests
        }
    }

    /// Waits `duration` on `clock` without taking anything (the writer's backoff); a virtual
    /// clock's jump past the end ends it. `orSubmission`: so do a submission, a request or
    /// `close()` (a held batch that a critical one merges into goes at once). Writer thread.
    func pause(for duration: Duration, on clock: any StrataClock, orSubmission: Bool = false) {
        let until = clock.now() + duration
        let end = Date(timeIntervalSinceNow: max(0, duration.seconds))
        lock.withLock {
            let (sequence, pending, stageBefore) = (lastSequence, requests.count, stage)
            (writerWaiting, writerParked) = (true, orSubmission)
            defer { (writerWaiting, writerParked) = (false, false) }
            while lock.wait(until: end) {
                if orSubmission && (lastSequence != sequence || requests.count != pending || stage == .closed) { return }
                if stage > stageBefore { return }   // a shutdown began: its shorter backoff from now on
                if clock.now() >= until { return }   // woken by a virtual clock's jump
            }
        }
    }

    /// Ends the writer's current or next wait without a batch, so that it looks at its
    /// other work again (compaction asked for, or the power or the user changed).
    func nudge() {
        lock.withLock {
            nudged = true
            if writerWaiting { lock.broadcast() }
        }
    }

    /// Returns a failed batch to the front; anything submitted meanwhile merges into it.
    func putBack(_ failed: WriteBatch) {
        lock.withLock {
            if let waiting { failed.merge(newer: waiting) }
            for batch in newer { failed.merge(newer: batch) }
            newer = []
            waiting = failed
        }
    }

    /// Records that every batch up to `batch.sequence` is in the database, and keeps
    /// the batch, emptied, as a spare. Writer thread; the writer keeps no reference.
    func didCommit(_ batch: WriteBatch) {
        let sequence = batch.sequence
        batch.reset()
        lock.withLock {
            committedSequence = max(committedSequence, sequence)
            if spares.count < Self.queuedBatches { spares.append(batch) }
            if commitWaiters > 0 { lock.broadcast() }
        }
    }

    /// Waits until batch `sequence` is committed; false if `deadline` passed first.
    func waitForCommit(_ sequence: UInt64, until deadline: Date?) -> Bool {
        lock.withLock {
            // Someone is blocked on the writer: do not leave the batch to the next poll.
            if writerWaiting && waiting != nil { lock.broadcast() }
            commitWaiters += 1
            defer { commitWaiters -= 1 }
            while committedSequence < sequence && corruption == nil {
                if !lock.wait(until: deadline) { return committedSequence >= sequence }
            }
            return committedSequence >= sequence
        }
    }

    /// The writer found the file corrupt and has stopped writing to it: wakes whoever
    /// waits for a commit. Writer thread (or the integrity check's).
    func reportCorruption(_ error: StoreError) {
        lock.withLock {
            if corruption == nil { corruption = error }
            lock.broadcast()
        }
    }

    /// What the writer reported, until the file is replaced.
    var reportedCorruption: StoreError? { lock.withLock { corruption } }

    /// The file has been replaced: a new writer takes batches from here on.
    func clearCorruption() {
        lock.withLock { corruption = nil }
    }

    /// Takes the waiting batch, if any, without waiting (the engine, once the writer has
    /// stopped).
    func takeWaiting() -> WriteBatch? {
        var queued: [WriteBatch] = []
        let taken: WriteBatch? = lock.withLock {
            defer { waiting = nil }
            swap(&queued, &newer)
            return waiting
        }
        if let taken { fold(queued, into: taken) }
        return taken
    }

    /// No more batches will be submitted: `take` returns `.closed` once the slot is empty.
    func close() { advance(to: .closed) }

    /// A shutdown begins (its last batch comes later): the writer's backoff shortens to the
    /// shutdown's, the one under way too, and requests behind a batch that cannot commit are
    /// answered at once (the workers stopping wait on them). Any thread.
    func beginClosing() { advance(to: .closing) }

    private func advance(to next: Stage) {
        lock.withLock {
            stage = max(stage, next)
            lock.broadcast()
        }
    }

    var isClosed: Bool { lock.withLock { stage == .closed } }
    var isClosing: Bool { lock.withLock { stage >= .closing } }   // closed, or ``beginClosing()`` called
    /// When the last batch was submitted (the writer polls half a tick away from it).
    var lastSubmission: Instant? { lock.withLock { lastSubmitAt } }
    /// Whether the writer is waiting for a wake (tests).
    var isWriterParked: Bool { lock.withLock { writerParked } }
    var lastSubmitted: UInt64 { lock.withLock { lastSequence } }
}

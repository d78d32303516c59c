import Foundation

/// Rounds another thread asks a writer task to run now, and waits for (`compactNow()`,
/// `maintainNow()`): numbered tickets, served in order by the writer thread.
///
///     request ──nudge──▶ the task's next `stepDue()` starts a forced round
///        ▲                                    │
///        └──── serve(upTo: ticket) ◀── round done, or failed
///
/// Its own lock: the asking thread and the writer meet here only.
final class ForcedRounds: @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `lock`.
    private let lock = Lock()
    private var requested = 0
    private var served = 0
    private var failed = false
    private var closed = false

    /// The newest ticket asked for, if it is not served yet. Writer thread.
    var pending: Int? {
        lock.withLock { requested > served ? requested : nil }
    }

    /// Takes the next ticket, calls `wake` (the writer looks at its tasks again) and waits
    /// until it is served. False if `timeout` passed first, the writer finished, or the
    /// round failed.
    func requestAndWait(timeout: Duration, wake: () -> Void) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        let ticket = lock.withLock {
            requested += 1
            return requested
        }
        wake()
        return lock.withLock {
            while served < ticket && !closed {
                if !lock.wait(until: deadline) { return false }
            }
            return served >= ticket && !failed
        }
    }

    /// Every ticket up to `ticket` is served, the round having `failed` or not. Writer thread.
    func serve(upTo ticket: Int, failed: Bool) {
        lock.withLock {
            served = max(served, ticket)
            self.failed = failed
            lock.broadcast()
        }
    }

    /// The writer finished: waiting callers return false, new ones at once.
    func close() {
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }
}

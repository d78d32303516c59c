/// When the writer looks at the hand-off next, and what it does when nothing came: a pure
/// decision from what the writer knows (the time, its last batch, the checkpoint timer,
/// whether a background step is due, a retry or a request deadline, the failures in a row),
/// and what follows a failed commit (`WriterSchedule+Failures.swift`).
/// It reads no clock and does no I/O; ``Writer``'s loop reads its one clock, asks, and
/// acts. Instants are on the writer's clock (the engine's: virtual in tests). Tested in
/// virtual time (`WriterScheduleTests`).
///
/// - While batches keep coming (within `pollLinger` of the last one) the writer polls the
///   hand-off every `pollInterval` (the tick thread then never wakes it); after that it
///   parks until the checkpoint timer or a retry is due, and the next flush wakes it.
/// - A due background step (of a ``WriterTask``: the integrity check, compaction,
///   maintenance, a backup) means: look at the hand-off without waiting, then run the step.
/// - A request waiting for a batch gives up at its deadline, batch or not.
/// - The checkpoint timer starts over with every batch, and when it fires.
///
/// Writer thread.
struct WriterSchedule: Equatable {
    let checkpointInterval: Duration
    let pollInterval: Duration
    let pollLinger: Duration
    /// Between a failed commit and the next attempt (`WriterSchedule+Failures.swift`).
    let backoff: Backoff
    /// Failed attempts allowed once the hand-off is closed, before the disk reserve goes.
    let shutdownAttempts: Int
    /// Failed commits in a row (batches and request groups alike).
    var failures = 0
    /// Of those, since the hand-off closed.
    var closingFailures = 0
    /// The disk reserve was released for one last try.
    var reserveReleased = false
    /// When the last batch was taken.
    private(set) var lastBatch: Instant?
    /// When the checkpoint timer fires next.
    private(set) var checkpointDue: Instant

    init(now: Instant, checkpointInterval: Duration, pollInterval: Duration, pollLinger: Duration,
         backoff: Backoff = Backoff(initial: .milliseconds(50), longest: .seconds(5)), shutdownAttempts: Int = 5) {
        self.checkpointInterval = checkpointInterval
        self.pollInterval = pollInterval
        self.pollLinger = pollLinger
        self.backoff = backoff
        self.shutdownAttempts = shutdownAttempts
        checkpointDue = now + checkpointInterval
    }

    /// Until when to wait for the hand-off, and whether to park (be woken by the next
    /// hand-off) rather than poll.
    struct Wait: Equatable {
        var until: Instant
        var parked: Bool
    }

    /// `stepDue`: a task's step is due; `pollDelay`: the next poll's delay (half a tick
    /// away from the ticks); `retryAt`: the earliest retry of a task's failed step;
    /// `requestDeadline`: the earliest deadline of a request waiting for a batch.
    func wait(now: Instant, stepDue: Bool, pollDelay: Duration, retryAt: Instant?, requestDeadline: Instant?) -> Wait {
        let polling = isPolling(now: now)
        let wake = if stepDue {
            now
        } else if polling {
            min(checkpointDue, now + pollDelay)
        } else {
            min(checkpointDue, retryAt ?? checkpointDue)
        }
        return Wait(until: min(wake, requestDeadline ?? wake), parked: !polling && !stepDue)
    }

    /// Batches came within `pollLinger`: the writer polls instead of parking.
    func isPolling(now: Instant) -> Bool {
        guard pollInterval > .zero, let lastBatch else { return false }
        return now.duration(since: lastBatch) < pollLinger
    }

    /// A batch was taken at `now`: the checkpoint timer starts over.
    mutating func tookBatch(at now: Instant) {
        lastBatch = now
        checkpointDue = now + checkpointInterval
    }

    /// What to do when a wait ended with nothing in the hand-off.
    enum Idle: Equatable {
        /// Run the background step that was due.
        case step
        /// The checkpoint timer fired (it starts over).
        case checkpoint
        /// A poll that found nothing: look again.
        case nothing
    }

    mutating func timedOut(now: Instant, stepDue: Bool) -> Idle {
        if stepDue { return .step }
        guard now >= checkpointDue else { return .nothing }
        checkpointDue = now + checkpointInterval
        return .checkpoint
    }
}

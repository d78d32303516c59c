/// The writer's failure policy, part of its schedule: after a commit of a batch or a group
/// of requests failed, when to try again, and, once a shutdown has closed the hand-off,
/// when to stop trying. A pure decision, like the rest of ``WriterSchedule``: it counts the
/// failures and returns what to do; the writer's loop does it (`Writer+Thread.swift`).
/// Tested in `WriterScheduleTests`.
///
/// - While running, every failure backs off, doubling from `retry_initial_backoff_ms` up to
///   `retry_max_backoff_ms`; a batch is never given up (it waits, merged with what comes).
/// - Once a shutdown began, the backoff is at most ``closingBackoff``; the requests behind a
///   batch that cannot commit are failed at once (the workers that stop wait on them).
/// - Once the hand-off is closed, after ``shutdownAttempts`` failures the disk reserve is
///   released for one more try; the next failure parks what is left and ends the loop.
///   A request group, past the attempts, fails with the last error.
extension WriterSchedule {
    /// What the writer does after a failed commit.
    struct AfterFailure: Equatable {
        /// Fail the requests waiting in the hand-off with the last error, now.
        var failWaitingRequests = false
        var then: Next

        enum Next: Equatable {
            /// Wait this long on the writer's clock, then try again.
            case retry(after: Duration)
            /// Free the disk reserve (``DiskReserve``) and try again at once; if there was
            /// nothing to free, park.
            case releaseReserveAndRetry
            /// Give up: park what waits in the side file and end the loop.
            case park
        }
    }

    /// Where a shutdown is when the commit failed.
    enum Stage: Equatable {
        case running
        /// A shutdown began: batches may still come.
        case closing
        /// The hand-off is closed: what waits is the last of it.
        case closed
    }

    /// A commit of a batch (`batch`) or of a group of requests failed.
    mutating func failed(batch: Bool, stage: Stage) -> AfterFailure {
        failures += 1
        var after = AfterFailure(failWaitingRequests: batch && stage == .closing,
                                 then: .retry(after: Self.backoff(after: failures, backoff, closing: stage != .running)))
        guard stage == .closed else { return after }
        closingFailures += 1
        guard closingFailures >= shutdownAttempts else { return after }
        if !batch {
            after.failWaitingRequests = true
            after.then = .retry(after: .zero)
        } else if reserveReleased {
            after.then = .park
        } else {
            reserveReleased = true
            after.then = .releaseReserveAndRetry
        }
        return after
    }

    /// A commit went through: the streak of failures ends. Returns its length.
    @discardableResult
    mutating func succeeded() -> Int {
        defer { failures = 0 }
        return failures
    }

    /// How long to wait before the next attempt after `failures` failed ones in a row:
    /// doubling from `initial` up to `longest`; while shutting down (`closing`) at most
    /// ``closingBackoff``, so that a shutdown on a disk that stays full ends within a
    /// couple of seconds of its start (a run used to end 17 s after its duration).
    static func backoff(after failures: Int, _ backoff: Backoff, closing: Bool = false) -> Duration {
        let wait = backoff.wait(after: max(failures, 1))
        return closing ? min(wait, closingBackoff) : wait
    }

    /// The longest wait between two attempts while shutting down.
    static let closingBackoff: Duration = .milliseconds(250)
}

import Foundation
import Testing
@testable import Strata

/// The writer's schedule in virtual time: when it looks at the hand-off, whether it parks,
/// and what an empty wait leads to.
@Suite struct WriterScheduleTests {
    let start = Instant(nanoseconds: 1_000_000_000_000)

    func schedule() -> WriterSchedule {
        WriterSchedule(now: start, checkpointInterval: .seconds(30), pollInterval: .milliseconds(100), pollLinger: .seconds(5))
    }

    func at(_ seconds: Double) -> Instant { start + .nanoseconds(Int64(seconds * 1e9)) }

    @Test func beforeAnyBatchItParksUntilTheCheckpointTimer() {
        let wait = schedule().wait(now: at(1), stepDue: false, pollDelay: .milliseconds(100), retryAt: nil, requestDeadline: nil)
        #expect(wait == .init(until: at(30), parked: true))
    }

    @Test func whileBatchesKeepComingItPollsAndNeverParks() {
        var schedule = schedule()
        schedule.tookBatch(at: at(10))
        let wait = schedule.wait(now: at(12), stepDue: false, pollDelay: .milliseconds(90), retryAt: nil, requestDeadline: nil)
        #expect(wait == .init(until: at(12.09), parked: false))
        // Past the linger, it parks until the timer, which the batch started over.
        let later = schedule.wait(now: at(15.5), stepDue: false, pollDelay: .milliseconds(90), retryAt: nil, requestDeadline: nil)
        #expect(later == .init(until: at(40), parked: true))
    }

    @Test func aPollIntervalOfZeroAlwaysParks() {
        var schedule = WriterSchedule(now: start, checkpointInterval: .seconds(30), pollInterval: .zero, pollLinger: .seconds(5))
        schedule.tookBatch(at: at(1))
        #expect(schedule.wait(now: at(1.01), stepDue: false, pollDelay: .zero, retryAt: nil, requestDeadline: nil).parked)
    }

    @Test func aDueStepLooksAtTheHandOffWithoutWaiting() {
        let wait = schedule().wait(now: at(3), stepDue: true, pollDelay: .milliseconds(100), retryAt: nil, requestDeadline: nil)
        #expect(wait == .init(until: at(3), parked: false))
    }

    @Test func aRetryOrARequestDeadlineEndsTheWaitEarly() {
        let retry = schedule().wait(now: at(1), stepDue: false, pollDelay: .zero, retryAt: at(4), requestDeadline: nil)
        #expect(retry == .init(until: at(4), parked: true))
        let request = schedule().wait(now: at(1), stepDue: false, pollDelay: .zero, retryAt: at(4), requestDeadline: at(2))
        #expect(request.until == at(2))
    }

    @Test func anEmptyWaitRunsTheDueStepOrTheCheckpointTimer() {
        var schedule = schedule()
        #expect(schedule.timedOut(now: at(5), stepDue: true) == .step)
        #expect(schedule.timedOut(now: at(29.9), stepDue: false) == .nothing)
        #expect(schedule.timedOut(now: at(30), stepDue: false) == .checkpoint)
        // The timer started over: the next one is 30 s on.
        #expect(schedule.timedOut(now: at(31), stepDue: false) == .nothing)
        #expect(schedule.checkpointDue == at(60))
    }

    @Test func failuresBackOffDoublingUpToTheLongestAndAtMostASecondWhileClosing() {
        let waits = (1 ... 8).map { WriterSchedule.backoff(after: $0, Backoff(initial: .milliseconds(100), longest: .seconds(5))) }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                          .milliseconds(3200), .seconds(5), .seconds(5)])
        #expect(WriterSchedule.backoff(after: 6, Backoff(initial: .milliseconds(100), longest: .seconds(5)), closing: true) == .milliseconds(250))
        #expect(WriterSchedule.backoff(after: 1_000, Backoff(initial: .milliseconds(100), longest: .seconds(5))) == .seconds(5), "no overflow")
    }

    // MARK: After a failed commit

    func failing(attempts: Int = 3) -> WriterSchedule {
        WriterSchedule(now: at(0), checkpointInterval: .seconds(30), pollInterval: .zero, pollLinger: .zero,
                       backoff: Backoff(initial: .milliseconds(100), longest: .seconds(1)), shutdownAttempts: attempts)
    }

    @Test func whileRunningABatchIsRetriedForeverBackingOff() {
        var schedule = failing()
        let waits = (1 ... 6).map { _ in schedule.failed(batch: true, stage: .running) }
        #expect(waits.map(\.then) == [.retry(after: .milliseconds(100)), .retry(after: .milliseconds(200)), .retry(after: .milliseconds(400)),
                                      .retry(after: .milliseconds(800)), .retry(after: .seconds(1)), .retry(after: .seconds(1))])
        #expect(waits.allSatisfy { !$0.failWaitingRequests })
        #expect(schedule.succeeded() == 6, "the streak, for the log line")
        #expect(schedule.failed(batch: true, stage: .running).then == .retry(after: .milliseconds(100)), "a success starts over")
    }

    @Test func aShutdownThatBeganFailsTheRequestsBehindAFailingBatch() {
        var schedule = failing()
        let after = schedule.failed(batch: true, stage: .closing)
        #expect(after.failWaitingRequests)
        #expect(after.then == .retry(after: .milliseconds(100)))
        for _ in 0 ..< 5 { _ = schedule.failed(batch: true, stage: .closing) }
        #expect(schedule.failed(batch: true, stage: .closing).then == .retry(after: WriterSchedule.closingBackoff),
                "never parked before the hand-off closes; the wait is at most the closing backoff")
    }

    @Test func onceClosedTheReserveGoesAfterTheAttemptsThenWhatWaitsIsParked() {
        var schedule = failing(attempts: 3)
        #expect(schedule.failed(batch: true, stage: .closed).then == .retry(after: .milliseconds(100)))
        #expect(schedule.failed(batch: true, stage: .closed).then == .retry(after: .milliseconds(200)))
        #expect(schedule.failed(batch: true, stage: .closed).then == .releaseReserveAndRetry)
        #expect(schedule.failed(batch: true, stage: .closed).then == .park)
    }

    @Test func onceClosedARequestGroupFailsAfterTheAttempts() {
        var schedule = failing(attempts: 2)
        #expect(schedule.failed(batch: false, stage: .closed) == .init(failWaitingRequests: false, then: .retry(after: .milliseconds(100))))
        #expect(schedule.failed(batch: false, stage: .closed) == .init(failWaitingRequests: true, then: .retry(after: .zero)))
        #expect(schedule.failed(batch: true, stage: .closed).then == .releaseReserveAndRetry, "the batch behind them still gets its last try")
    }
}

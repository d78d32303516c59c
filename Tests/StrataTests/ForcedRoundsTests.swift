import Foundation
import Testing
@testable import Strata

/// `compactNow()` and `maintainNow()` wait on tickets the writer thread serves.
@Suite struct ForcedRoundsTests {
    /// Serves the newest pending ticket from another thread (the writer's part), with `failed`.
    func serveFromAnotherThread(_ rounds: ForcedRounds, failed: Bool) {
        Thread.detachNewThread {
            while rounds.pending == nil { usleep(1000) }
            rounds.serve(upTo: rounds.pending!, failed: failed)
        }
    }

    @Test func aServedRoundReturnsTrueAndLeavesNothingPending() {
        let rounds = ForcedRounds()
        var woken = false
        serveFromAnotherThread(rounds, failed: false)
        #expect(rounds.requestAndWait(timeout: .seconds(30)) { woken = true })
        #expect(woken, "the writer is woken to look at its tasks")
        #expect(rounds.pending == nil)
    }

    @Test func aFailedRoundReturnsFalse() {
        let rounds = ForcedRounds()
        serveFromAnotherThread(rounds, failed: true)
        #expect(!rounds.requestAndWait(timeout: .seconds(30)) {})
    }

    @Test func aWriterThatFinishesEndsTheWaitWithFalse() {
        let rounds = ForcedRounds()
        Thread.detachNewThread {
            while rounds.pending == nil { usleep(1000) }
            rounds.close()
        }
        #expect(!rounds.requestAndWait(timeout: .seconds(30)) {})
        #expect(!rounds.requestAndWait(timeout: .seconds(30)) {}, "after the close, at once")
    }

    @Test func nobodyServingTimesOut() {
        #expect(!ForcedRounds().requestAndWait(timeout: .milliseconds(20)) {})
    }
}

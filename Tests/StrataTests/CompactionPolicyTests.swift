import Testing
@testable import Strata

@Suite struct CompactionPolicyTests {
    let mb = 1024 * 1024
    var policy: CompactionPolicy {
        var config = CompactionConfig()
        config.idleBacklogBytes = 1 * mb
        config.backlogBytes = 16 * mb
        config.maxBacklogBytes = 64 * mb
        return CompactionPolicy(config: config)
    }

    /// Hot keys: 1,000 keys of 22 bytes live, over a large base table.
    func input(log: Int, live: Int = 22_000, keys: Int = 1_000, basePages: Int = 1_500, mains: Bool = true,
               idle: Bool = false, round: CompactionPolicy.Method? = nil) -> CompactionPolicy.Input {
        CompactionPolicy.Input(logBytes: log, liveBytes: live, liveKeys: keys, basePages: basePages, pageSize: 4096,
                               onMains: mains, idle: idle, round: round)
    }

    @Test func anEmptyLogIsNeverCompacted() {
        #expect(policy.decide(input(log: 0, live: 0, keys: 0, idle: true)) == nil)
    }

    @Test func onMainsItWaitsForTheBacklogCap() {
        #expect(policy.decide(input(log: 16 * mb - 1)) == nil)
        #expect(policy.decide(input(log: 16 * mb)) == .merge)
    }

    @Test func onBatteryItWaitsForTheHardCap() {
        #expect(policy.decide(input(log: 63 * mb, mains: false)) == nil)
        #expect(policy.decide(input(log: 63 * mb, mains: false, idle: true)) == nil, "idle on battery is not a reason")
        #expect(policy.decide(input(log: 64 * mb, mains: false)) == .merge)
    }

    @Test func idleOnMainsFoldsEagerly() {
        #expect(policy.decide(input(log: 1 * mb - 1, idle: true)) == nil)
        #expect(policy.decide(input(log: 1 * mb, idle: true)) == .fold)
    }

    @Test func aRoundGoesOnWhileThePowerAllows() {
        #expect(policy.decide(input(log: 2 * mb, round: .merge)) == .merge, "below the cap: the round still finishes")
        #expect(policy.decide(input(log: 2 * mb, mains: false, round: .fold)) == nil, "on battery below the hard cap: paused")
        #expect(policy.decide(input(log: 70 * mb, mains: false, round: .fold)) == .fold)
    }

    @Test func hotKeysOverABigWorldAreMerged() {
        // 1,000 live keys over 1,500 base pages: a fold rewrites ~1,000 pages (4 MB), a merge 22 KB.
        #expect(policy.cheaper(input(log: 16 * mb), cap: 16 * mb) == .merge)
        // Even with a cap of 32 KB: 22 KB every 10 KB appended beats 4 MB every 32 KB.
        #expect(policy.cheaper(input(log: 32 * 1024), cap: 32 * 1024) == .merge)
    }

    @Test func aSmallBaseTableIsFoldedInto() {
        // Ten base pages (40 KB) every 16 MB cost less than 200 KB of live records every 15.8 MB.
        #expect(policy.cheaper(input(log: 16 * mb, live: 200_000, keys: 10_000, basePages: 10), cap: 16 * mb) == .fold)
        // A whole small world that moves: 15 pages (60 KB) every 128 KB vs 22 KB every 106 KB.
        #expect(policy.cheaper(input(log: 128 * 1024, basePages: 15), cap: 128 * 1024) == .merge)
        #expect(policy.cheaper(input(log: 32 * 1024, basePages: 15), cap: 32 * 1024) == .fold)
    }

    @Test func aLogThatIsAllLiveIsFolded() {
        // A merge would leave the log at its cap: only a fold empties it.
        #expect(policy.cheaper(input(log: 20 * mb, live: 17 * mb, keys: 700_000, basePages: 100_000), cap: 16 * mb) == .fold)
        // 9 MB live of a 16 MB cap over a 400 MB table: merging (1.3 bytes a byte) still beats folding (25).
        #expect(policy.cheaper(input(log: 16 * mb, live: 9 * mb, keys: 400_000, basePages: 100_000), cap: 16 * mb) == .merge)
    }

    @Test func aForcedMethodWins() {
        var forced = policy
        forced.forcedMethod = .merge
        #expect(forced.decide(input(log: 16 * mb, live: 9 * mb)) == .merge)
        #expect(forced.decide(input(log: 1 * mb, idle: true)) == .merge)
        #expect(forced.decide(input(log: 1 * mb)) == nil, "but not before its cap")
    }
}

import Testing
@testable import Strata

@Suite struct FlushPolicyTests {
    let t0 = Instant(nanoseconds: 1_000_000_000)
    var policy = FlushPolicy(config: PersistenceConfig())

    @Test func criticalIsDueAtItsDelayAndNotBefore() {
        let before = policy.decide(.init(now: t0 + .milliseconds(999), criticalFirstChange: t0))
        let at = policy.decide(.init(now: t0 + .milliseconds(1000), criticalFirstChange: t0))
        #expect(!before.flushCritical)
        #expect(at.flushCritical && !at.flushDerived)
    }

    @Test func lookaheadBringsTheDecisionForward() {
        let input = FlushPolicy.Input(now: t0 + .milliseconds(950), criticalFirstChange: t0, lookahead: .milliseconds(60))
        #expect(policy.decide(input).flushCritical)
    }

    /// A flush takes the other tier along when it would fall due within the lookahead
    /// too (one commit, not two a few ticks apart), and only then.
    @Test func aDueTierTakesTheOtherAlongWhenItFallsDueWithinTheLookahead() {
        let lookahead = Duration.milliseconds(150)
        let derivedDue = t0 + .seconds(5) - lookahead   // desktop on AC: a 5 s interval
        func decide(now: Instant, criticalDue: Instant) -> FlushPolicy.Decision {
            policy.decide(.init(now: now, criticalFirstChange: criticalDue - .seconds(1) + lookahead,
                                derivedFirstChange: t0, lookahead: lookahead))
        }
        let soon = decide(now: derivedDue, criticalDue: derivedDue + .milliseconds(150))
        #expect(soon.flushDerived && soon.flushCritical, "critical due within the lookahead: taken along")
        let later = decide(now: derivedDue, criticalDue: derivedDue + .milliseconds(151))
        #expect(later.flushDerived && !later.flushCritical)
        let criticalFirst = decide(now: derivedDue - .milliseconds(100), criticalDue: derivedDue - .milliseconds(100))
        #expect(criticalFirst.flushCritical && criticalFirst.flushDerived, "derived due within the lookahead: taken along")
        let criticalAlone = decide(now: derivedDue - .milliseconds(200), criticalDue: derivedDue - .milliseconds(200))
        #expect(criticalAlone.flushCritical && !criticalAlone.flushDerived)
        let neither = decide(now: derivedDue - .milliseconds(200), criticalDue: derivedDue - .milliseconds(100))
        #expect(neither.isEmpty, "nothing due: nothing is taken along")
    }

    @Test func nothingPendingIsNeverDue() {
        #expect(policy.decide(.init(now: t0 + .seconds(3600))).isEmpty)
    }

    @Test(arguments: [
        // (battery present, on battery, charging, percent, power saver, idle) → seconds
        (false, false, false, nil as Double?, false, false, 5.0),   // desktop on AC
        (true, false, true, 40, false, false, 5),                   // charging
        (true, false, false, 100, false, false, 5),                 // on AC, full
        (true, true, false, 80, false, false, 10),
        (true, true, false, 50.5, false, false, 10),
        (true, true, false, 50, false, false, 30),                  // 50 % is medium
        (true, true, false, 20, false, false, 30),                  // 20 % is medium
        (true, true, false, 19.9, false, false, 60),
        (true, true, false, 15, false, false, 60),
        (true, true, false, 80, true, false, 60),                   // power saver
        (false, false, false, nil, true, false, 60),                // power saver on a desktop
        (true, true, false, 80, false, true, 30),                   // idle: at least 30 s
        (true, true, false, 10, false, true, 60),                   // idle never shortens
    ])
    func derivedIntervalFollowsPowerAndActivity(present: Bool, onBattery: Bool, charging: Bool, percent: Double?,
                                                saver: Bool, idle: Bool, seconds: Double) {
        let power = PowerState(batteryPresent: present, onBattery: onBattery, charging: charging, percentage: percent, powerSaver: saver)
        #expect(policy.derivedInterval(power: power, activity: idle ? .idle : .active) == .seconds(seconds))
    }

    @Test func thresholdsAndIntervalsComeFromTheConfig() {
        var config = PersistenceConfig()
        config.batteryTiers.highAbovePercent = 70
        config.batteryTiers.lowBelowPercent = 30
        config.batteryTiers.medium = .seconds(45)
        config.lowPowerModeInterval = .seconds(90)
        let policy = FlushPolicy(config: config)
        #expect(policy.tier(power: .discharging(70.1)) == .high)
        #expect(policy.tier(power: .discharging(70)) == .medium)
        #expect(policy.derivedInterval(power: .discharging(60), activity: .active) == .seconds(45))
        #expect(policy.tier(power: .discharging(30)) == .medium)
        #expect(policy.tier(power: .discharging(29.9)) == .low)
        var saver = PowerState.discharging(90)
        saver.powerSaver = true
        #expect(policy.derivedInterval(power: saver, activity: .active) == .seconds(90))
    }

    @Test func anUnknownChargeOnBatteryUsesTheFlushInterval() {
        var power = PowerState.discharging(50)
        power.percentage = nil
        #expect(policy.tier(power: power) == .unknownCharge)
        #expect(policy.derivedInterval(power: power, activity: .active) == .seconds(10))
    }

    @Test func batteryAdaptiveOffAlwaysUsesTheFlushInterval() {
        var config = PersistenceConfig()
        config.batteryAdaptive = false
        config.flushInterval = .seconds(12)
        let policy = FlushPolicy(config: config)
        for power in [PowerState.assumedAC, .discharging(5), .discharging(90)] {
            for activity in [Activity.active, .idle] {
                #expect(policy.derivedInterval(power: power, activity: activity) == .seconds(12))
            }
        }
    }

    @Test func aShorterIntervalTakesEffectAtOnce() {
        // Became dirty on 15 % battery (60 s deadline), then the charger was plugged in (5 s).
        let deadline = policy.derivedDeadline(firstChange: t0, power: .discharging(15), activity: .active)
        #expect(deadline == t0 + .seconds(60))
        let charging = PowerState(batteryPresent: true, onBattery: false, charging: true, percentage: 15, powerSaver: false)
        let decision = policy.decide(.init(now: t0 + .seconds(5), derivedFirstChange: t0, derivedDeadline: deadline, power: charging))
        #expect(decision.flushDerived)
    }

    @Test func aLongerIntervalKeepsThePendingDeadline() {
        // Became dirty while charging (5 s deadline), then unplugged at 15 % (60 s).
        let charging = PowerState(batteryPresent: true, onBattery: false, charging: true, percentage: 15, powerSaver: false)
        let deadline = policy.derivedDeadline(firstChange: t0, power: charging, activity: .active)
        let input = FlushPolicy.Input(now: t0 + .seconds(5), derivedFirstChange: t0, derivedDeadline: deadline, power: .discharging(15))
        #expect(policy.decide(input).flushDerived)
    }

    @Test func idleFlushesCarryTheIdleReason() {
        let decision = policy.decide(.init(now: t0 + .seconds(30), derivedFirstChange: t0, activity: .idle))
        #expect(decision.flushDerived)
        #expect(decision.derivedReason == .idleInterval)
    }

    @Test func desktopAllowsALargerWal() {
        #expect(policy.maxWalBytes(power: .assumedAC) == 10 * 1024 * 1024)
        #expect(policy.maxWalBytes(power: .discharging(80)) == 5 * 1024 * 1024)
    }
}

@Suite struct CheckpointPolicyTests {
    let policy = CheckpointPolicy(interval: .seconds(30), maxWalBytes: 1000)
    let t0 = Instant(nanoseconds: 0)

    @Test func emptyWalNeedsNoCheckpoint() {
        #expect(policy.decide(now: t0 + .seconds(300), lastCheckpoint: t0, pendingWalBytes: 0, incompleteStreak: 0) == nil)
    }

    @Test func passiveOnTheIntervalOrOnSize() {
        #expect(policy.decide(now: t0 + .seconds(29), lastCheckpoint: t0, pendingWalBytes: 10, incompleteStreak: 0) == nil)
        #expect(policy.decide(now: t0 + .seconds(30), lastCheckpoint: t0, pendingWalBytes: 10, incompleteStreak: 0) == .passive)
        #expect(policy.decide(now: t0 + .seconds(1), lastCheckpoint: t0, pendingWalBytes: 1000, incompleteStreak: 0) == .passive)
    }

    @Test func escalatesWhenPassiveCannotFinish() {
        let now = t0 + .seconds(31)
        #expect(policy.decide(now: now, lastCheckpoint: t0, pendingWalBytes: 10, incompleteStreak: 1) == .passive)
        #expect(policy.decide(now: now, lastCheckpoint: t0, pendingWalBytes: 10, incompleteStreak: 2) == .restart)
        #expect(policy.decide(now: now, lastCheckpoint: t0, pendingWalBytes: 10, incompleteStreak: 4) == .truncate)
        #expect(policy.decide(now: now, lastCheckpoint: t0, pendingWalBytes: 4000, incompleteStreak: 0) == .passive)
        #expect(policy.decide(now: now, lastCheckpoint: t0, pendingWalBytes: 4000, incompleteStreak: 1) == .truncate)
    }
}

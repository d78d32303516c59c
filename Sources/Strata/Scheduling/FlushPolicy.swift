/// The row of the battery table in force (`[persistence.battery]`; ``Engine/powerTier``).
public enum PowerTier: String, Sendable, Equatable, CaseIterable {
    /// `battery_adaptive = false`: `flush_interval_secs`.
    case fixed
    case powerSaver = "power-saver"
    /// No battery: the desktop override.
    case desktop
    case charging
    case high
    case medium
    case low
    /// On battery with an unknown charge: `flush_interval_secs`.
    case unknownCharge = "unknown-charge"
}

/// The pure decision "is a flush due?" (the specification, *Battery-adaptive flushing* and *Flush events*).
///
/// A function of (config, power, activity, clock) with no I/O, so it is tested over
/// tables in virtual time. `FlushScheduler` is the thin stateful shell around it.
///
/// Deadlines run from the first pending change of a tier:
/// - critical: `first + critical_flush_delay`;
/// - derived: `first + derived interval`, where the interval is the one in force when
///   the tier became dirty, or the current one if that is shorter (a shortened interval
///   takes effect at once; a lengthened one never delays a change already pending).
/// A tier is due when its deadline falls before `now + lookahead`, the lookahead being
/// one tick plus the writer's commit budget, so a change is *committed* by its deadline
/// rather than merely handed off after it. A tier that is due takes the other along when
/// that one falls due within the lookahead as well (one commit, not two a few ticks apart).
@usableFromInline
package struct FlushPolicy: Sendable, Equatable {
    package var config: PersistenceConfig

    package init(config: PersistenceConfig) { self.config = config }

    /// What the policy is asked at the end of a tick.
    package struct Input: Sendable, Equatable {
        package var now: Instant
        package var criticalFirstChange: Instant?
        package var derivedFirstChange: Instant?
        /// The derived deadline captured when the tier became dirty.
        package var derivedDeadline: Instant?
        package var power: PowerState
        package var activity: Activity
        package var lookahead: Duration

        package init(now: Instant, criticalFirstChange: Instant? = nil, derivedFirstChange: Instant? = nil,
                    derivedDeadline: Instant? = nil, power: PowerState = .assumedAC,
                    activity: Activity = .active, lookahead: Duration = .zero) {
            self.now = now
            self.criticalFirstChange = criticalFirstChange
            self.derivedFirstChange = derivedFirstChange
            self.derivedDeadline = derivedDeadline
            self.power = power
            self.activity = activity
            self.lookahead = lookahead
        }
    }

    /// Which tiers to flush now, and why.
    @usableFromInline
    package struct Decision: Sendable, Equatable {
        @usableFromInline package var flushCritical = false
        @usableFromInline package var flushDerived = false
        @usableFromInline package var derivedReason: FlushReason = .derivedInterval

        @usableFromInline package var isEmpty: Bool { !flushCritical && !flushDerived }
    }

    /// Which row of the battery table applies to a power state.
    ///
    /// `battery_adaptive = false` is ``PowerTier/fixed``. Otherwise, in order: the
    /// power-saver profile, no battery (a desktop on mains), charging or on AC, then the
    /// charge: above `high_above_percent` high, below `low_below_percent` low, else
    /// medium (so both boundaries, 50 % and 20 % by default, are medium).
    package func tier(power: PowerState) -> PowerTier {
        guard config.batteryAdaptive else { return .fixed }
        if power.powerSaver { return .powerSaver }
        if !power.batteryPresent { return .desktop }
        if power.charging || !power.onBattery { return .charging }
        guard let pct = power.percentage else { return .unknownCharge }
        if pct > config.batteryTiers.highAbovePercent { return .high }
        if pct < config.batteryTiers.lowBelowPercent { return .low }
        return .medium
    }

    /// The derived interval for this power state and activity: the tier's interval,
    /// and never less than the idle interval when idle (unless `battery_adaptive` is
    /// false: then `flush_interval_secs`, always).
    package func derivedInterval(power: PowerState, activity: Activity) -> Duration {
        let tier = tier(power: power)
        var interval: Duration = switch tier {
        case .fixed, .unknownCharge: config.flushInterval
        case .powerSaver: config.lowPowerModeInterval
        case .desktop: config.desktop.flushInterval
        case .charging: config.batteryTiers.charging
        case .high: config.batteryTiers.high
        case .medium: config.batteryTiers.medium
        case .low: config.batteryTiers.low
        }
        if tier != .fixed && activity == .idle { interval = max(interval, config.idleFlushInterval) }
        return interval
    }

    /// The WAL size that forces a checkpoint: larger on a desktop without a battery.
    package func maxWalBytes(power: PowerState) -> Int {
        config.batteryAdaptive && !power.batteryPresent ? config.desktop.maxWalSizeBytes : config.maxWalSizeBytes
    }

    /// The derived deadline to capture when the derived tier becomes dirty at `first`.
    package func derivedDeadline(firstChange first: Instant, power: PowerState, activity: Activity) -> Instant {
        first + derivedInterval(power: power, activity: activity)
    }

    /// When each dirty tier falls due: its deadline less the lookahead. ``decide(_:)``
    /// flushes a tier once `now` reaches its instant; nil for a clean tier.
    package func dueInstants(_ input: Input) -> DueInstants {
        var due = DueInstants()
        if let first = input.criticalFirstChange {
            due.critical = first + config.criticalFlushDelay - input.lookahead
        }
        if let first = input.derivedFirstChange {
            let current = first + derivedInterval(power: input.power, activity: input.activity)
            let deadline = input.derivedDeadline.map { min($0, current) } ?? current
            due.derived = deadline - input.lookahead
        }
        return due
    }

    /// When each tier falls due (``dueInstants(_:)``).
    @usableFromInline
    package struct DueInstants: Sendable, Equatable {
        @usableFromInline package var critical: Instant?
        @usableFromInline package var derived: Instant?

        @usableFromInline package init(critical: Instant? = nil, derived: Instant? = nil) {
            self.critical = critical
            self.derived = derived
        }

        /// The earlier of the two; nil if no tier is dirty.
        @usableFromInline package var first: Instant? {
            switch (critical, derived) {
            case let (c?, d?): min(c, d)
            case let (c, d): c ?? d
            }
        }

        /// The tiers due at `now`, with the user's `activity` (which names the derived reason).
        ///
        /// A tier that is due takes the other along when that one falls due within
        /// `alongWithin` (the lookahead): one commit instead of two a few ticks apart,
        /// which would otherwise be two flush ticks, and two WAL appends of a page or more
        /// unless the second happened to reach the hand-off before the writer took the
        /// first. Early is never late: each tier is still flushed by its own deadline.
        @usableFromInline package func decision(now: Instant, activity: Activity, alongWithin: Duration = .zero) -> Decision {
            var decision = Decision()
            if let critical { decision.flushCritical = now >= critical }
            if let derived {
                decision.flushDerived = now >= derived
                decision.derivedReason = activity == .idle ? .idleInterval : .derivedInterval
            }
            if decision.flushCritical != decision.flushDerived {
                let horizon = now + alongWithin
                if let critical, !decision.flushCritical { decision.flushCritical = critical <= horizon }
                if let derived, !decision.flushDerived { decision.flushDerived = derived <= horizon }
            }
            return decision
        }
    }

    /// The earliest `now` at which ``decide(_:)`` flushes a tier, the other inputs staying
    /// as they are; nil if no tier is dirty. The scheduler need not ask again before it.
    package func nextDecision(_ input: Input) -> Instant? {
        dueInstants(input).first
    }

    package func decide(_ input: Input) -> Decision {
        dueInstants(input).decision(now: input.now, activity: input.activity, alongWithin: input.lookahead)
    }
}

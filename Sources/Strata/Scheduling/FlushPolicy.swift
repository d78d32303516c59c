/// The pure decision "is a flush due?" (RFC 0002 "Battery-Adaptive Flushing", "Flush Events").
///
/// A function of (config, power, activity, clock) with no I/O, so it is tested over
/// tables in virtual time. ``FlushScheduler`` is the thin stateful shell around it.
///
/// Deadlines run from the first pending change of a tier:
/// - critical: `first + critical_flush_delay`;
/// - derived: `first + derived interval`, where the interval is the one in force when
///   the tier became dirty, or the current one if that is shorter (a shortened interval
///   takes effect at once; a lengthened one never delays a change already pending).
/// A tier is due when its deadline falls before `now + lookahead`, the lookahead being
/// one tick plus the writer's commit budget, so a change is *committed* by its deadline
/// rather than merely handed off after it.
public struct FlushPolicy: Sendable, Equatable {
    public var config: PersistenceConfig

    public init(config: PersistenceConfig) { self.config = config }

    /// What the policy is asked at the end of a tick.
    public struct Input: Sendable, Equatable {
        public var now: Instant
        public var criticalFirstChange: Instant?
        public var derivedFirstChange: Instant?
        /// The derived deadline captured when the tier became dirty.
        public var derivedDeadline: Instant?
        public var power: PowerState
        public var activity: Activity
        public var lookahead: Duration

        public init(now: Instant, criticalFirstChange: Instant? = nil, derivedFirstChange: Instant? = nil,
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
    public struct Decision: Sendable, Equatable {
        public var flushCritical = false
        public var flushDerived = false
        public var derivedReason: FlushReason = .derivedInterval

        public var isEmpty: Bool { !flushCritical && !flushDerived }
    }

    /// The derived interval for this power state and activity.
    ///
    /// `battery_adaptive = false`: `flush_interval_secs`, always. Otherwise the
    /// power-saver interval, the desktop interval without a battery, the battery tier
    /// (charging or on AC; >50 %; 20–50 %; <20 %), and never less than the idle
    /// interval when idle.
    public func derivedInterval(power: PowerState, activity: Activity) -> Duration {
        guard config.batteryAdaptive else { return config.flushInterval }
        var interval: Duration
        if power.powerSaver {
            interval = config.lowPowerModeInterval
        } else if !power.batteryPresent {
            interval = config.desktop.flushInterval
        } else if power.charging || !power.onBattery {
            interval = config.batteryTiers.charging
        } else if let pct = power.percentage {
            interval = pct > 50 ? config.batteryTiers.high
                : pct >= 20 ? config.batteryTiers.medium
                : config.batteryTiers.low
        } else {
            interval = config.flushInterval
        }
        if activity == .idle { interval = max(interval, config.idleFlushInterval) }
        return interval
    }

    /// The WAL size that forces a checkpoint: larger on a desktop without a battery.
    public func maxWalBytes(power: PowerState) -> Int {
        config.batteryAdaptive && !power.batteryPresent ? config.desktop.maxWalSizeBytes : config.maxWalSizeBytes
    }

    /// The derived deadline to capture when the derived tier becomes dirty at `first`.
    public func derivedDeadline(firstChange first: Instant, power: PowerState, activity: Activity) -> Instant {
        first + derivedInterval(power: power, activity: activity)
    }

    public func decide(_ input: Input) -> Decision {
        var decision = Decision()
        let horizon = input.now + input.lookahead
        if let first = input.criticalFirstChange {
            decision.flushCritical = horizon >= first + config.criticalFlushDelay
        }
        if let first = input.derivedFirstChange {
            let current = first + derivedInterval(power: input.power, activity: input.activity)
            let deadline = input.derivedDeadline.map { min($0, current) } ?? current
            decision.flushDerived = horizon >= deadline
            decision.derivedReason = input.activity == .idle ? .idleInterval : .derivedInterval
        }
        return decision
    }
}

/// Asks ``FlushPolicy`` at the end of each tick and drains the due tiers into a batch.
///
/// Owned by the tick thread (inside ``Engine``).
///
/// State: the derived deadline captured when the derived tier became dirty
/// (`nil` while it is clean), pending explicit flush requests, and the last input instant.
struct FlushScheduler {
    var policy: FlushPolicy
    /// Captured when the derived tier first became dirty; cleared when it is drained.
    private(set) var derivedDeadline: Instant?
    /// Reasons of flush events requested since the last end of tick: flush every tier.
    private(set) var requested: Set<FlushReason> = []
    var lastInput: Instant
    var lookahead: Duration

    init(policy: FlushPolicy, now: Instant, lookahead: Duration) {
        self.policy = policy
        self.lastInput = now
        self.lookahead = lookahead
    }

    func activity(now: Instant) -> Activity {
        now.duration(since: lastInput) > policy.config.idleAfter ? .idle : .active
    }

    mutating func request(_ reason: FlushReason) { requested.insert(reason) }

    /// Decides and drains; returns the batch to hand off, or nil if nothing is due.
    mutating func endTick(world: World, now: Instant, power: PowerState) -> WriteBatch? {
        let activity = activity(now: now)
        let derivedFirst = world.firstPendingChange(.derived)
        if let derivedFirst, derivedDeadline == nil {
            derivedDeadline = policy.derivedDeadline(firstChange: derivedFirst, power: power, activity: activity)
        }
        var decision = policy.decide(FlushPolicy.Input(
            now: now,
            criticalFirstChange: world.firstPendingChange(.critical),
            derivedFirstChange: derivedFirst,
            derivedDeadline: derivedDeadline,
            power: power, activity: activity, lookahead: lookahead))
        var reasons: Set<FlushReason> = []
        if !requested.isEmpty {
            reasons = requested
            requested = []
            decision.flushCritical = world.firstPendingChange(.critical) != nil
            decision.flushDerived = derivedFirst != nil
        } else {
            if decision.flushCritical { reasons.insert(.criticalDelay) }
            if decision.flushDerived { reasons.insert(decision.derivedReason) }
        }
        guard !decision.isEmpty else { return nil }

        var batch = WriteBatch()
        batch.reasons = reasons
        if decision.flushCritical { world.drain(.critical, into: &batch) }
        if decision.flushDerived {
            world.drain(.derived, into: &batch)
            derivedDeadline = nil
        }
        return batch
    }
}

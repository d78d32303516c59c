/// Asks ``FlushPolicy`` at the end of each tick and drains the due tiers into a batch.
///
/// Owned by the tick thread (inside ``Engine``).
///
/// State: the derived deadline captured when the derived tier became dirty (`nil`
/// while it is clean); flush events waiting for their deadline (every tier is flushed
/// by `eventDeadline`, for `eventReasons`); the vector-clock trigger; the last input.
struct FlushScheduler {
    var policy: FlushPolicy
    /// Captured when the derived tier first became dirty; cleared when it is drained.
    private(set) var derivedDeadline: Instant?
    /// The earliest deadline of the flush events requested since the last flush of every tier.
    private(set) var eventDeadline: Instant?
    private(set) var eventReasons = FlushReasonSet()
    var vectorClock: VectorClockTrigger
    var lastInput: Instant
    var lookahead: Duration

    init(policy: FlushPolicy, now: Instant, lookahead: Duration) {
        self.policy = policy
        self.lastInput = now
        self.lookahead = lookahead
        self.vectorClock = VectorClockTrigger(everyOperations: policy.config.vectorClockEveryOperations,
                                              interval: policy.config.vectorClockInterval)
    }

    func activity(now: Instant) -> Activity {
        now.duration(since: lastInput) > policy.config.idleAfter ? .idle : .active
    }

    /// A flush event that wants every tier by `deadline`.
    mutating func request(_ reason: FlushReason, by deadline: Instant) {
        eventDeadline = eventDeadline.map { min($0, deadline) } ?? deadline
        eventReasons.insert(reason)
    }

    /// Drains every tier now (an app transition, an explicit save, shutdown) into `batch`,
    /// which must be empty.
    mutating func drainAll(world: World, reasons: FlushReasonSet, into batch: WriteBatch, now: Instant? = nil) {
        batch.reasons = reasons.union(eventReasons)
        let now = now ?? world.clock.now()
        world.drain(.critical, into: batch, at: now)
        world.drain(.derived, into: batch, at: now)
        derivedDeadline = nil
        eventDeadline = nil
        eventReasons = []
    }

    /// Decides and drains the due tiers into `batch`, which must be empty. Returns false
    /// if nothing is due (the batch is untouched).
    mutating func endTick(world: World, now: Instant, power: PowerState, into batch: WriteBatch) -> Bool {
        if vectorClock.isDue(now: now) {
            vectorClock.reset()
            request(.vectorClock, by: now)
        }
        if let deadline = eventDeadline, now + lookahead >= deadline {
            drainAll(world: world, reasons: [], into: batch, now: now)
            return true
        }
        let activity = activity(now: now)
        let derivedFirst = world.firstPendingChange(.derived)
        if let derivedFirst, derivedDeadline == nil {
            derivedDeadline = policy.derivedDeadline(firstChange: derivedFirst, power: power, activity: activity)
        }
        let decision = policy.decide(FlushPolicy.Input(
            now: now,
            criticalFirstChange: world.firstPendingChange(.critical),
            derivedFirstChange: derivedFirst,
            derivedDeadline: derivedDeadline,
            power: power, activity: activity, lookahead: lookahead))
        guard !decision.isEmpty else { return false }
        var reasons = FlushReasonSet()
        if decision.flushCritical { reasons.insert(.criticalDelay) }
        if decision.flushDerived { reasons.insert(decision.derivedReason) }

        batch.reasons = reasons
        if decision.flushCritical { world.drain(.critical, into: batch, at: now) }
        if decision.flushDerived {
            world.drain(.derived, into: batch, at: now)
            derivedDeadline = nil
        }
        return true
    }
}

/// Asks ``FlushPolicy`` at the end of each tick and drains the due tiers into a batch.
///
/// Owned by the tick thread (inside ``Engine``).
///
/// State: the derived deadline captured when the derived tier became dirty (`nil`
/// while it is clean); flush events waiting for their deadline (every tier is flushed
/// by `eventDeadline`, for `eventReasons`); the vector-clock trigger (when a critical
/// drain takes the clock's rows along: it never asks for a flush); the last input;
/// and the *quiet period* of the last decision.
///
/// The quiet period is what keeps an end of tick cheap: after a decision that flushed
/// nothing, `quietUntil` is the earliest instant anything could fall due (a tier's
/// deadline, ``FlushPolicy/nextDecision(_:)``; an event's; the user turning idle). Until
/// then, while no tier goes from clean to dirty, the decision would come out the same,
/// and `endTick` returns after a few comparisons instead of
/// running the policy (whose code and data a sleeping tick thread finds cold: it cost
/// 4–7 µs a tick on the development VM). That test is inlined into the host
/// (``Engine/endTick()``). Every input that could change the decision ends the quiet
/// period: an event, a power change, input after idling, a drain of every tier. A quiet
/// period that runs out by time alone keeps its due instants, so the flush tick itself
/// does not run the policy either. Neither do the two other ticks of
/// a critical change: the critical tier's due instant depends on nothing but its first
/// change, so that change joins the quiet period (``admitCriticalChange(now:critical:derived:)``),
/// and a flush of the critical tier alone goes on with the derived tier's due instant.
@usableFromInline
struct FlushScheduler {
    // What every tick reads (``noteInput(at:)``, ``isQuiet(now:critical:derived:)``)
    // comes first: two cache lines, after the engine's own hot fields.
    /// Nothing can fall due before this instant while `quietFirstDirty` holds (see above).
    @usableFromInline var quietUntil: Instant?
    /// Each tier's first dirty instant at the last decision.
    @usableFromInline var quietFirstDirty: (critical: Instant?, derived: Instant?)
    /// The user was idle at the last decision: input now would shorten the derived interval.
    @usableFromInline var quietWhileIdle = false
    @usableFromInline var lastInput: Instant
    /// When the user turns idle without further input: `lastInput + idle_after_secs`.
    /// Never before the first input: a host that does not report input (no
    /// ``Engine/noteInput()``) has no idle user, so its derived interval stays the one
    /// its power state gives.
    @usableFromInline var idleAt: Instant
    /// `idle_after_secs` in nanoseconds: input is noted every tick while the user plays,
    /// and `Instant + Duration` goes through the standard library's 128-bit arithmetic.
    @usableFromInline let idleAfterNanoseconds: Int64

    /// The last decision's due instants: when its quiet period runs out by time alone,
    /// they say what is due without asking the policy again (see `endTick`). Valid
    /// while `quietUntil` is set.
    @usableFromInline var quietDue = FlushPolicy.DueInstants()

    var policy: FlushPolicy
    /// Captured when the derived tier first became dirty; cleared when it is drained.
    private(set) var derivedDeadline: Instant?
    /// The earliest deadline of the flush events requested since the last flush of every tier.
    private(set) var eventDeadline: Instant?
    private(set) var eventReasons = FlushReasonSet()
    private(set) var vectorClock: VectorClockTrigger
    let lookahead: Duration
    /// `critical_flush_delay − lookahead` in nanoseconds: a critical tier dirty since
    /// `first` falls due at `first` plus this (``FlushPolicy/dueInstants(_:)``).
    @usableFromInline let criticalDueAfterNanoseconds: Int64

    init(policy: FlushPolicy, now: Instant, lookahead: Duration) {
        self.policy = policy
        self.criticalDueAfterNanoseconds = (policy.config.criticalFlushDelay - lookahead).nanoseconds
        self.lastInput = now
        self.idleAt = Instant(nanoseconds: .max)
        self.idleAfterNanoseconds = policy.config.idleAfter.nanoseconds
        self.lookahead = lookahead
        self.vectorClock = VectorClockTrigger(everyOperations: policy.config.vectorClockEveryOperations,
                                              interval: policy.config.vectorClockInterval)
    }

    func activity(now: Instant) -> Activity {
        now > idleAt ? .idle : .active
    }

    /// Records user input (for idle detection).
    @inlinable
    mutating func noteInput(at now: Instant) {
        // The first input starts idle detection: a quiet period decided without an idle
        // instant must end so that the next decision has one.
        if quietWhileIdle || idleAt.nanoseconds == .max { quietUntil = nil }
        lastInput = now
        idleAt = Instant(nanoseconds: now.nanoseconds &+ idleAfterNanoseconds)
    }

    /// Records operation-log activity for the vector-clock trigger. It changes no
    /// decision (the operations are critical work of their own), so the quiet period holds.
    mutating func recordOperations(_ count: Int, now: Instant) {
        vectorClock.record(count, now: now)
    }

    /// The next critical drain takes the vector clock's rows (a clock repaired at open).
    mutating func writeVectorClockWithNextFlush(now: Instant) {
        vectorClock.makeDue(now: now)
    }

    /// Forgets the quiet period: the next end of tick decides afresh (the power state
    /// changed, so the derived interval may have).
    mutating func reconsider() {
        quietUntil = nil
    }

    /// A flush event that wants every tier by `deadline`.
    mutating func request(_ reason: FlushReason, by deadline: Instant) {
        eventDeadline = eventDeadline.map { min($0, deadline) } ?? deadline
        eventReasons.insert(reason)
        quietUntil = nil
    }

    /// Drains every tier now (an app transition, an explicit save, shutdown) into `batch`,
    /// which must be empty.
    mutating func drainAll(world: World, reasons: FlushReasonSet, into batch: WriteBatch, now: Instant? = nil) {
        batch.reasons = reasons.union(eventReasons)
        let now = now ?? world.clock.now()
        drainCritical(world: world, into: batch, now: now)
        world.drain(.derived, into: batch, at: now)
        derivedDeadline = nil
        eventDeadline = nil
        eventReasons = []
        quietUntil = nil
    }

    /// Whether the last decision still holds: `now` is inside its quiet period and no
    /// tier has gone from clean to dirty since (`critical`, `derived`: the tiers' first
    /// dirty instants now).
    @inlinable @inline(__always)
    func isQuiet(now: Instant, critical: Instant?, derived: Instant?) -> Bool {
        guard let quietUntil, now < quietUntil else { return false }
        return critical == quietFirstDirty.critical && derived == quietFirstDirty.derived
    }

    /// The critical tier went from clean to dirty inside the quiet period, and nothing
    /// else changed: the policy would give the critical tier `first + critical_flush_delay
    /// − lookahead` and every other due instant as before (a tier's due instant does not
    /// depend on the other's), so the quiet period only ends earlier, at the critical
    /// one, and the decision is not asked again. Returns false, changing nothing, where
    /// that does not hold (the caller then decides in full).
    ///
    /// This is the tick of every first critical change after a flush (once a second in a
    /// game that edits something critical all the time): without it, that tick ran the
    /// monitors, the activity and the policy, cold, for a decision known in advance.
    @inlinable
    mutating func admitCriticalChange(now: Instant, critical: Instant?, derived: Instant?) -> Bool {
        guard let until = quietUntil, now < until, quietFirstDirty.critical == nil,
              let critical, derived == quietFirstDirty.derived else { return false }
        let due = Instant(nanoseconds: critical.nanoseconds &+ criticalDueAfterNanoseconds)
        guard now < due else { return false }
        quietFirstDirty.critical = critical
        quietDue.critical = due
        if due < until { quietUntil = due }
        return true
    }

    /// Decides and drains the due tiers into `batch`, which must be empty. Returns false
    /// if nothing is due (the batch is untouched).
    mutating func endTick(world: World, now: Instant, power currentPower: @autoclosure () -> PowerState, into batch: WriteBatch) -> Bool {
        let criticalFirst = world.firstPendingChange(.critical)
        let derivedFirst = world.firstPendingChange(.derived)
        if isQuiet(now: now, critical: criticalFirst, derived: derivedFirst) { return false }
        let expiredByTime = criticalFirst == quietFirstDirty.critical && derivedFirst == quietFirstDirty.derived
        if let deadline = eventDeadline, now + lookahead >= deadline {
            drainAll(world: world, reasons: [], into: batch, now: now)
            return true
        }
        let activity = activity(now: now)
        var decision = FlushPolicy.Decision()
        // The quiet period ran out by time alone (no tier went dirty, no event, no power
        // or activity change): the due instants of the last decision still hold, and the
        // policy, whose code and data are cold on a tick thread that slept, need not
        // run on the flush tick (the next tick asks it afresh).
        let fromQuietDue = expiredByTime && quietUntil != nil && activity == (quietWhileIdle ? .idle : .active)
        if fromQuietDue { decision = quietDue.decision(now: now, activity: activity, alongWithin: lookahead) }
        if decision.isEmpty {
            let power = currentPower()   // read only past the quiet period: a copy that costs on the tick
            if let derivedFirst, derivedDeadline == nil {
                derivedDeadline = policy.derivedDeadline(firstChange: derivedFirst, power: power, activity: activity)
            }
            let input = FlushPolicy.Input(
                now: now,
                criticalFirstChange: criticalFirst,
                derivedFirstChange: derivedFirst,
                derivedDeadline: derivedDeadline,
                power: power, activity: activity, lookahead: lookahead)
            let due = policy.dueInstants(input)
            decision = due.decision(now: now, activity: activity, alongWithin: lookahead)
            guard !decision.isEmpty else {
                beginQuietPeriod(due: due, firstDirty: (criticalFirst, derivedFirst), activity: activity)
                return false
            }
        }
        quietUntil = nil
        var reasons = FlushReasonSet()
        if decision.flushCritical { reasons.insert(.criticalDelay) }
        if decision.flushDerived { reasons.insert(decision.derivedReason) }
        if eventDeadline != nil {
            // A flush event waits (a major action, operations from peers): it asks for every
            // tier within the critical delay, so it goes with this flush, one commit and one
            // sync, rather than in a second commit a moment later.
            drainAll(world: world, reasons: reasons, into: batch, now: now)
            return true
        }

        batch.reasons = reasons
        if decision.flushCritical { drainCritical(world: world, into: batch, now: now) }
        if decision.flushDerived {
            world.drain(.derived, into: batch, at: now)
            derivedDeadline = nil
        }
        // Only the critical tier was due, by time alone: what remains (the derived tier's
        // due instant, events, idling) is what the last decision knew,
        // so the quiet period goes on from here, and the tick after the flush does not
        // ask the policy (cold) for it.
        // (A critical drain can take a spawned entity's other components along: the tiers'
        // first dirty instants are read again.)
        if fromQuietDue, decision.flushCritical, !decision.flushDerived,
           world.firstPendingChange(.critical) == nil, world.firstPendingChange(.derived) == derivedFirst {
            beginQuietPeriod(due: FlushPolicy.DueInstants(critical: nil, derived: quietDue.derived),
                             firstDirty: (nil, derivedFirst), activity: activity)
        }
        return true
    }

    /// Drains the critical tier, with the vector clock's rows when its trigger is due or
    /// the batch is an app transition's or the shutdown's (the last chance, maybe).
    private mutating func drainCritical(world: World, into batch: WriteBatch, now: Instant) {
        let withClock = !batch.reasons.isDisjoint(with: .withVectorClock) || vectorClock.isDue(now: now)
        world.drain(.critical, into: batch, at: now, withClock: withClock)
        if withClock { vectorClock.reset() }
        vectorClock.record(world.takeReplicatedLogCount(), now: now)
    }

    /// Quiet until a tier or an event falls due, or the user turns idle.
    /// (No array of candidates: this runs on the tick after every flush, and an allocation
    /// there shows in the tick's p99.)
    private mutating func beginQuietPeriod(due: FlushPolicy.DueInstants, firstDirty: (critical: Instant?, derived: Instant?),
                                           activity: Activity) {
        var until = Instant(nanoseconds: .max)
        func consider(_ candidate: Instant?) { if let candidate, candidate < until { until = candidate } }
        consider(due.first)
        consider(eventDeadline.map { $0 - lookahead })
        consider(activity == .active ? idleAt : nil)
        quietUntil = until
        quietFirstDirty = firstDirty
        quietWhileIdle = activity == .idle
        quietDue = due
    }
}

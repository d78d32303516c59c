extension Writer {
    /// How long the polling writer sleeps before it looks at the slot again: about
    /// `pollInterval`, placed half a tick away from the tick thread's ticks.
    ///
    /// A wake-up that lands on a tick costs that tick: on a small VM the timer interrupt
    /// and the writer's few microseconds share the tick thread's CPU or its core, and the
    /// slowed ticks showed up as the p90 of `strata bench`. The ticks' phase is that of
    /// the last submission (made at the end of a tick, on the engine's clock: with a
    /// virtual clock the phase is arbitrary, and the delay still within a tick of the
    /// interval). Writer thread.
    func nextPollDelay() -> Duration {
        Self.pollDelay(now: clock.now(), lastSubmission: buffer.lastSubmission,
                       interval: settings.pollInterval, tick: settings.tickInterval)
    }

    /// The delay from `now` to the instant `lastSubmission + (k + ½)·tick` that is at
    /// most `interval` away and later than `interval − tick` (just `interval` when the
    /// phase or the tick is unknown).
    static func pollDelay(now: Instant, lastSubmission: Instant?, interval: Duration, tick: Duration) -> Duration {
        let tickNanos = tick.nanoseconds
        guard let anchor = lastSubmission, tickNanos > 0, interval.nanoseconds > tickNanos else { return interval }
        let target = now.nanoseconds + interval.nanoseconds
        let phase = target - (anchor.nanoseconds + tickNanos / 2)
        let offset = ((phase % tickNanos) + tickNanos) % tickNanos
        return .nanoseconds(interval.nanoseconds - offset)
    }
}

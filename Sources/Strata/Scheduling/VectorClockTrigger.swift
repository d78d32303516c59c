/// How far the stored vector clock may lag the operation log: the specification's "every 5
/// operations or 5 s, whichever comes first" (`vector_clock_every_operations`,
/// `vector_clock_every_secs`), as a bound, never as a reason to commit.
///
/// The vector clock is derived state: it is rebuilt from the log at every open (and the
/// stored copy repaired), so it never needs a sync of its own. The operations themselves
/// are critical work and reach the file with the critical flush; the clock's rows go
/// along with that flush once this trigger is due (so many operations since the rows were
/// last taken, or so long since the first of them), and with every app transition and the
/// shutdown. A trigger that falls due by time waits for the next critical flush.
///
/// Pure state, owned by the tick thread (inside ``FlushScheduler``).
struct VectorClockTrigger: Sendable, Equatable {
    let everyOperations: Int
    let interval: Duration
    /// Operations since the vector clock was last taken by a drain.
    private(set) var pending = 0
    /// When the first of them happened.
    private(set) var firstPending: Instant?

    init(everyOperations: Int, interval: Duration) {
        self.everyOperations = everyOperations
        self.interval = interval
    }

    mutating func record(_ operations: Int, now: Instant) {
        guard operations > 0 else { return }
        if firstPending == nil { firstPending = now }
        pending += operations
    }

    /// The next critical drain takes the clock's rows along.
    func isDue(now: Instant) -> Bool {
        guard let first = firstPending else { return false }
        return pending >= everyOperations || now >= first + interval
    }

    /// The next critical drain takes the clock's rows whatever the count (a clock repaired
    /// at open).
    mutating func makeDue(now: Instant) {
        firstPending = now
        pending = everyOperations
    }

    /// A drain took the clock's rows.
    mutating func reset() {
        pending = 0
        firstPending = nil
    }
}

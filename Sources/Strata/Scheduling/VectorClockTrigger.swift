/// RFC 0002 "Network Events": the vector clock is persisted every 5 operations or 5 s,
/// whichever comes first.
///
/// Pure state, owned by the tick thread (inside ``FlushScheduler``).
struct VectorClockTrigger: Sendable, Equatable {
    let everyOperations: Int
    let interval: Duration
    /// Operations since the vector clock was last flushed.
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

    /// When the interval runs out (the count is checked when operations are recorded).
    var dueAt: Instant? {
        guard let first = firstPending else { return nil }
        return pending >= everyOperations ? first : first + interval
    }

    func isDue(now: Instant) -> Bool {
        guard let first = firstPending else { return false }
        return pending >= everyOperations || now >= first + interval
    }

    mutating func reset() {
        pending = 0
        firstPending = nil
    }
}

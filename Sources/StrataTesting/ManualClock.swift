import Foundation
import Strata

/// A clock that moves only when told to, for tests in virtual time.
///
/// ```swift
/// let clock = ManualClock()
/// clock.advance(by: .milliseconds(900))
/// ```
public final class ManualClock: StrataClock, @unchecked Sendable {
    // @unchecked Sendable: `current` and `wakers` are only touched under `lock`.
    private let lock = NSLock()
    private var current: Instant
    private var wakers: [@Sendable () -> Void] = []

    public init(start: Instant = Instant(nanoseconds: 1_000_000_000)) { current = start }

    public func now() -> Instant { lock.withLock { current } }

    /// Moves the clock, then wakes whoever waits for an instant on it (the writer: its
    /// checkpoint timer, its backoff, its tasks' retries), outside the clock's lock.
    public func advance(by duration: Duration) {
        let wakers = lock.withLock {
            current = current + duration
            return self.wakers
        }
        for wake in wakers { wake() }
    }

    public func whenAdvanced(_ wake: @escaping @Sendable () -> Void) {
        lock.withLock { wakers.append(wake) }
    }
}

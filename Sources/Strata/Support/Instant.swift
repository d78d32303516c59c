#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point on a monotonic timeline, in nanoseconds.
///
/// Deadlines are `Instant`s; intervals are `Duration`s. The two never mix
/// implicitly: `instant + duration` is a deadline, `a.duration(since: b)` an interval.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary, fixed origin (the clock's).
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public static func + (lhs: Instant, rhs: Duration) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds &+ rhs.nanoseconds)
    }

    public static func - (lhs: Instant, rhs: Duration) -> Instant {
        Instant(nanoseconds: lhs.nanoseconds &- rhs.nanoseconds)
    }

    /// The interval from `earlier` to `self` (negative if `earlier` is later).
    public func duration(since earlier: Instant) -> Duration {
        .nanoseconds(nanoseconds &- earlier.nanoseconds)
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }

    /// The duration in seconds as a floating-point number.
    package var seconds: Double { Double(nanoseconds) / 1e9 }

    /// The duration in milliseconds as a floating-point number.
    package var milliseconds: Double { Double(nanoseconds) / 1e6 }
}

/// The source of "now" for every time-dependent decision in the engine.
///
/// Production uses ``MonotonicClock``; tests use `ManualClock` (the `StrataTesting` library)
/// and run in virtual time.
public protocol StrataClock: Sendable {
    func now() -> Instant
    /// Calls `wake` each time the clock jumps ahead (`ManualClock.advance(by:)`), so that
    /// a thread waiting for an instant on it looks again at once instead of waiting the
    /// interval out in real time. A clock that moves by itself never jumps: by default
    /// nothing is registered.
    func whenAdvanced(_ wake: @escaping @Sendable () -> Void)
}

extension StrataClock {
    public func whenAdvanced(_ wake: @escaping @Sendable () -> Void) {}
}

/// `CLOCK_MONOTONIC`: system-wide, so two processes on one machine can compare instants.
public struct MonotonicClock: StrataClock {
    @inlinable
    public init() {}

    @inlinable
    public func now() -> Instant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Instant(nanoseconds: Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}

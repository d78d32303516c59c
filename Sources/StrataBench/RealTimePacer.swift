import Foundation
import Strata

/// Paces a benchmark run in real time: tick `n` starts no earlier than `n` tick intervals
/// after the start. A run whose strategies cannot hold the rate stops at 1.25 S + 2 s of
/// wall time and reports the rate it reached. Runner's thread.
struct RealTimePacer {
    let clock = MonotonicClock()
    let start: Instant
    let tickInterval: Duration
    let cap: Duration

    init(hz: Int, seconds: Double) {
        tickInterval = .nanoseconds(1_000_000_000 / Int64(hz))
        cap = .nanoseconds(Int64((seconds * 1.25 + 2) * 1e9))
        start = clock.now()
    }

    /// Sleeps until tick `n` is due; false once the run is past its cap.
    func wait(forTick n: Int) -> Bool {
        let now = clock.now()
        guard now.duration(since: start) <= cap else { return false }
        let due = start + tickInterval * n
        if due > now { usleep(UInt32(max(1, due.duration(since: now).nanoseconds / 1000))) }
        return true
    }
}

/// A strategy's tick times, summarized (milliseconds).
struct TickTimes {
    var p50 = 0.0, p99 = 0.0, p99WindowMedian = 0.0, max = 0.0

    /// `window`: ticks per window for the median of the windows' p99s (the run's p99 when
    /// it is shorter than three windows).
    init(_ times: [Duration], window: Int) {
        let sorted = times.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))].milliseconds
        }
        p50 = percentile(0.5)
        p99 = percentile(0.99)
        p99WindowMedian = BenchRunner.windowMedianP99(times, window: window) ?? p99
        max = sorted.last?.milliseconds ?? 0
    }
}

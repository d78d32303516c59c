import Foundation
import Strata

/// When each change was made, and when it became safe from a crash and from a power
/// loss: the raw material of "data at risk".
///
/// Coverage events say "every change of this tier made up to `covers` is durable since
/// `at`". At a kill point `t`, the data at risk of a tier is the age of its oldest change
/// not covered by an event that happened before `t`.
///
/// Written from the tick thread (changes) and a writer thread (events): lock-protected.
package final class DurabilityLog: @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `lock`.
    private let lock = NSLock()
    private var changes: [[Instant]] = [[], []]
    private var crash: [[Event]] = [[], []]
    private var power: [[Event]] = [[], []]

    struct Event {
        var at: Instant
        var covers: Instant
    }

    package init() {}

    /// A change of `tier` made at `at` (tick thread, in time order).
    package func changed(_ tier: Tier, at: Instant) {
        lock.withLock { changes[tier.rawValue].append(at) }
    }

    /// Changes of `tier` made up to `covers` survive a crash from `at` on.
    package func crashSafe(_ tier: Tier, at: Instant, covers: Instant) {
        lock.withLock { crash[tier.rawValue].append(Event(at: at, covers: covers)) }
    }

    /// Changes of `tier` made up to `covers` survive a power loss from `at` on.
    package func powerSafe(_ tier: Tier, at: Instant, covers: Instant) {
        lock.withLock { power[tier.rawValue].append(Event(at: at, covers: covers)) }
    }

    /// Both at once (a synced commit, a snapshot renamed into place).
    package func durable(_ tier: Tier, at: Instant, covers: Instant) {
        crashSafe(tier, at: at, covers: covers)
        powerSafe(tier, at: at, covers: covers)
    }

    /// Data at risk over `samples` kill points spread uniformly over `from…to`.
    package func risk(from: Instant, to: Instant, samples: Int = 2000) -> RiskSummary {
        lock.withLock {
            let points = (0 ..< samples).map { i in
                from + .nanoseconds(Int64(Double(to.nanoseconds - from.nanoseconds) * (Double(i) + 0.5) / Double(samples)))
            }
            func summarize(_ events: [[Event]]) -> [String: RiskSummary.Stat] {
                var result: [String: RiskSummary.Stat] = [:]
                for tier in Tier.persisted {
                    let risks = points.map { Self.risk(at: $0, changes: changes[tier.rawValue], events: events[tier.rawValue]) }
                    guard !changes[tier.rawValue].isEmpty else { continue }
                    let sorted = risks.sorted()
                    result[tier.description] = RiskSummary.Stat(
                        meanSecs: sorted.reduce(0, +) / Double(sorted.count),
                        p99Secs: sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))],
                        maxSecs: sorted.last ?? 0)
                }
                return result
            }
            return RiskSummary(crash: summarize(crash), powerLoss: summarize(power))
        }
    }

    /// The age, at `t`, of the oldest change not covered by an event before `t` (seconds).
    static func risk(at t: Instant, changes: [Instant], events: [Event]) -> Double {
        var covered: Instant?
        for event in events where event.at <= t {
            covered = covered.map { max($0, event.covers) } ?? event.covers
        }
        // The first change after the coverage (an upper bound), if it was made before t.
        var first = 0
        if let covered {
            var hi = changes.count
            while first < hi {
                let mid = (first + hi) / 2
                if changes[mid] <= covered { first = mid + 1 } else { hi = mid }
            }
        }
        guard first < changes.count, changes[first] <= t else { return 0 }
        return t.duration(since: changes[first]).seconds
    }
}

/// Data at risk per tier (`critical`, `derived`), in seconds of changes lost.
package struct RiskSummary: Codable, Sendable, Equatable {
    package struct Stat: Codable, Sendable, Equatable {
        package var meanSecs: Double
        package var p99Secs: Double
        package var maxSecs: Double
    }

    /// At a process crash (SIGKILL) at a random instant.
    package var crash: [String: Stat]
    /// At a power loss at a random instant (only synced data survives).
    package var powerLoss: [String: Stat]
}

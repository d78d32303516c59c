import Foundation

/// Requests per subject on this instance: a token bucket each (`[limits]
/// requests_per_second`, `burst`). Past it a request gets 429 with the seconds until the
/// next token.
final class RateLimiter: @unchecked Sendable {
    // @unchecked Sendable: `buckets` is under `lock`.
    private let rate: Double
    private let burst: Double
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, at: Double)] = [:]

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// nil: go ahead; else the seconds to wait.
    func take(_ subject: String, now: Double = ProcessInfo.processInfo.systemUptime) -> Int? {
        lock.withLock {
            var bucket = buckets[subject] ?? (burst, now)
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * rate)
            bucket.at = now
            defer {
                buckets[subject] = bucket
                if buckets.count > 100_000 { prune(now) }
            }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }

    /// Forgets full buckets (they are what a new one would be).
    private func prune(_ now: Double) {
        buckets = buckets.filter { min(burst, $0.value.tokens + (now - $0.value.at) * rate) < burst }
    }
}

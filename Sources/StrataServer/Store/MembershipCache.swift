import Foundation

/// Roles recently read, so a device's every pull and push does not ask PostgreSQL who it is:
/// an answer (a role, or none) is kept `ttl` (`[auth] membership_cache_ms`). A grant or a
/// revocation takes effect within that on every instance; 0 asks every time.
final class MembershipCache: @unchecked Sendable {
    // @unchecked Sendable: `entries` is under `lock`.
    private let ttl: Double
    private let lock = NSLock()
    private var entries: [Key: (role: Role?, until: Double)] = [:]

    private struct Key: Hashable {
        var subject: String
        var document: String
    }

    init(ttl: Duration) {
        self.ttl = Double(ttl.components.seconds) + Double(ttl.components.attoseconds) / 1e18
    }

    /// The cached answer, if fresh: `.some(nil)` is a known stranger.
    func role(of subject: String, on document: String, now: Double = ProcessInfo.processInfo.systemUptime) -> Role?? {
        guard ttl > 0 else { return nil }
        return lock.withLock {
            guard let entry = entries[Key(subject: subject, document: document)], entry.until > now else { return nil }
            return .some(entry.role)
        }
    }

    func note(_ role: Role?, of subject: String, on document: String, now: Double = ProcessInfo.processInfo.systemUptime) {
        guard ttl > 0 else { return }
        lock.withLock {
            if entries.count > 200_000 { entries = entries.filter { $0.value.until > now } }
            entries[Key(subject: subject, document: document)] = (role, now + ttl)
        }
    }

    /// Drops what is known of `subject` on `document` (its role just changed here).
    func forget(_ subject: String, on document: String) {
        lock.withLock { _ = entries.removeValue(forKey: Key(subject: subject, document: document)) }
    }
}

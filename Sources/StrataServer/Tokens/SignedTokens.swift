import Foundation

/// Tokens whose form, signature, audience and subject checked, by their text. A device sends
/// the same token with every request until it renews it, and checking it again each time
/// (base64, two JSON reads and a signature) was a sixth of an instance's CPU with 1,000
/// devices pushing. Only what does not change with time is kept: `exp` and `nbf` are checked
/// on every request. A refused token is not kept. Bounded: emptied when full.
final class SignedTokens: @unchecked Sendable {
    // @unchecked Sendable: `entries` is under `lock`.
    private let lock = NSLock()
    private var entries: [String: TokenVerifier.Signed] = [:]
    let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// The token's subject, or why it is refused: checked once, then its times only.
    func subject(of token: String, by verifier: TokenVerifier, now: Date = Date()) -> Result<String, TokenRefusal> {
        if let known = lock.withLock({ entries[token] }) {
            return known.subject(at: now, leeway: verifier.leeway)
        }
        let checked = verifier.signed(token)
        if case .success(let signed) = checked {
            lock.withLock {
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
                entries[token] = signed
            }
        }
        return checked.flatMap { $0.subject(at: now, leeway: verifier.leeway) }
    }

    var count: Int { lock.withLock { entries.count } }
}

import Foundation

/// A mutex with an optional condition, for the short critical sections between threads.
///
/// Thin wrapper over `NSCondition` so call sites read as `lock.withLock { … }`.
final class Lock: @unchecked Sendable {
    // @unchecked Sendable: NSCondition is a pthread mutex + condvar; it is made to be shared.
    private let condition = NSCondition()

    @inline(__always)
    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    /// Waits (with the lock held by the caller inside `withLock`) until signalled or `deadline`.
    /// Returns false on timeout.
    @discardableResult
    func wait(until deadline: Date? = nil) -> Bool {
        if let deadline { return condition.wait(until: deadline) }
        condition.wait()
        return true
    }

    func broadcast() { condition.broadcast() }
}

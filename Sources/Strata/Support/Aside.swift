import Foundation

/// Work done on a thread of its own while the caller goes on, and its result, waited
/// for once (``wait()``). The open reads the operation log this way beside the world.
final class Aside<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    /// Set by the thread before it signals `done`; read after `done` was waited for.
    private var result: Result<Value, any Error>?

    init(name: String, _ body: @escaping @Sendable () throws -> Value) {
        let thread = Thread { [self] in
            result = Result { try body() }
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Waits for the work to end; its value, or the error it threw. Call once.
    func wait() throws -> Value {
        done.wait()
        guard let result else { throw CancellationError() }   // never: the thread sets it first
        return try result.get()
    }
}

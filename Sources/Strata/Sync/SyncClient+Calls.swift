import Foundation

/// The sync thread's calls into the async transport: each runs on the client's own
/// executor (``SyncExecutor``) and is waited for at most `request_timeout_ms`, so a server
/// that never answers never holds the sync thread nor a shutdown. Sync thread.
extension SyncClient {
    /// Runs an async call from this thread, waiting at most `request_timeout_ms`.
    func call<T: Sendable>(toServer: Bool = true, _ body: @escaping @Sendable () async throws -> T) throws -> T {
        if toServer { update { $0.requests += 1 } }
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, any Error>?
        let task = Task(executorPreference: executor) {
            do { result = .success(try await body()) } catch { result = .failure(error) }
            done.signal()
        }
        guard done.wait(timeout: .now() + config.requestTimeout.seconds) == .success else {
            task.cancel()
            blocking { await self.transport.disconnect() }
            throw SyncError(.unreachable, "no answer within \(Int(config.requestTimeout.milliseconds)) ms")
        }
        guard let result else { throw SyncError(.unreachable, "the call ended without an answer") }   // signalled after it is set
        return try result.get()
    }

    func blocking(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: executor) { await body(); done.signal() }
        _ = done.wait(timeout: .now() + config.requestTimeout.seconds)
    }
}

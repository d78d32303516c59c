import Foundation

/// Runs `body` on a thread of its own, and awaits it without holding one of Swift's
/// cooperative threads: there are as many as cores (two here), and a test that blocks one
/// (waiting for a process, a long command) starves the service instances that other tests
/// run in this process, whose handlers need those threads to answer.
func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

extension Process {
    /// Waits for the process to end, off the cooperative threads. Polls: Foundation's
    /// `waitUntilExit` on a thread of its own was seen spinning a core.
    func exited() async {
        let process = self
        _ = try? await offThread { while process.isRunning { usleep(10_000) } }
    }
}

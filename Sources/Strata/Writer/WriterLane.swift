import Foundation
import GRDB

/// Calls from any thread that run SQL on the writer (``WriterRequest``) and wait for the
/// commit: the job queue's and the asset store's.
struct WriterLane: Sendable {
    let buffer: WriteBuffer

    /// Runs `body` on the writer and waits for its commit. `body` returning nil means "what
    /// I need is not in the file yet": it runs again after each batch, for `waitingForBatches`,
    /// then the call fails with `orElse()`. A writer that cannot commit (a disk that stays
    /// full) keeps the request and retries it; the caller stops waiting after `timeout`
    /// (``WriterRequestError/timedOut``), and the request may still commit later.
    func perform<T>(_ durability: Durability, waitingForBatches: Duration = .zero, timeout: Duration = .seconds(120),
                    _ body: @escaping (Database) throws -> T?,
                    orElse missing: @escaping () -> Error = { WriterRequestError.timedOut }) throws -> T {
        nonisolated(unsafe) var value: T?
        let request = WriterRequest(durability: durability, deadline: Date(timeIntervalSinceNow: waitingForBatches.seconds)) { db in
            value = try body(db)
            return value == nil ? .waitForBatch : .done
        }
        guard buffer.submit(request) else { throw WriterRequestError.closed }
        // Waited in slices, so that a wait never outlives the host's stop (a signal) nor
        // stalls on a file found corrupt that only the tick thread can replace.
        let end = Date(timeIntervalSinceNow: (waitingForBatches + timeout).seconds)
        while true {
            switch request.wait(until: min(end, Date(timeIntervalSinceNow: 0.1))) {
            case .success?:
                guard let value else { throw missing() }
                return value
            case .failure(let error as WriterRequestError)? where error == .timedOut:
                throw missing()
            case .failure(let error)?:
                throw error
            case nil:
                if Date() >= end { throw WriterRequestError.timedOut }
                if buffer.waitsShouldStop { throw WriterRequestError.interrupted }
                buffer.noteCorruptionWhileWaiting()
            }
        }
    }
}

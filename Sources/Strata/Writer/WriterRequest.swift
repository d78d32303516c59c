import Foundation
import GRDB

/// Work another thread hands the writer: SQL on the document's one write connection (a
/// job's enqueue, claim or completion), run in the writer's next group commit. The
/// caller waits for it (``wait(until:)``) or is told (`onFinish`).
///
/// Group commit: the writer takes every request waiting in ``WriteBuffer`` at once and
/// runs them in ONE transaction, each in a savepoint of its own (one that fails rolls
/// back alone), with the strictest durability any of them asks for. Many workers
/// finishing together then cost one commit, and one sync.
///
/// A request that needs a row the tick thread has not handed over yet (a job for an
/// entity spawned this tick) answers ``Outcome/waitForBatch``: it runs again after each
/// batch the writer commits, until `deadline`.
final class WriterRequest: @unchecked Sendable {
    // @unchecked Sendable: `body` runs on the writer thread only; `result` is guarded by `lock`.
    enum Outcome {
        case done
        /// Run me again after the next batch (what I need is not in the file yet).
        case waitForBatch
    }

    let durability: Durability
    let body: (Database) throws -> Outcome
    /// When a request that keeps waiting for a batch gives up (with the error its body
    /// last threw, or ``WriterRequestError/timedOut``).
    /// The caller's patience, in real time (the caller waits in real time,
    /// ``WriterLane``), whatever the writer's clock.
    let deadline: Date
    private let onFinish: (@Sendable (Error?) -> Void)?
    private let lock = Lock()
    private var result: Result<Void, Error>?

    init(durability: Durability, deadline: Date = .distantFuture, onFinish: (@Sendable (Error?) -> Void)? = nil,
         body: @escaping (Database) throws -> Outcome) {
        self.durability = durability
        self.deadline = deadline
        self.onFinish = onFinish
        self.body = body
    }

    /// Runs the body inside a batch's transaction (``WriteBatch/riders``), in a savepoint
    /// of its own: returns nil if it is done (to be told once the batch commits), or its
    /// own error, rolled back alone. Rethrows what is the machine's trouble (busy, full,
    /// I/O, corrupt: ``Writer/isMachineTrouble(_:)``): the whole batch fails and is
    /// retried. Writer thread.
    func rideBatch(_ db: Database) throws -> Error? {
        do {
            var outcome = Outcome.done
            try db.inSavepoint {
                outcome = try body(db)
                return outcome == .done ? .commit : .rollback
            }
            return outcome == .done ? nil : WriterRequestError.missingRow
        } catch {
            if Writer.isMachineTrouble(error) { throw error }
            return error
        }
    }

    /// How long until ``deadline``; zero once it has passed. The writer reads only this.
    var patienceLeft: Duration {
        .nanoseconds(Int64(max(0, deadline.timeIntervalSinceNow) * 1e9))
    }

    /// Committed (nil), or why not. Writer thread; once.
    func finish(_ error: Error?) {
        lock.withLock {
            result = error.map { .failure($0) } ?? .success(())
            lock.broadcast()
        }
        onFinish?(error)
    }

    /// Waits until the request is committed or failed; nil if `deadline` passed first.
    func wait(until deadline: Date? = nil) -> Result<Void, Error>? {
        lock.withLock {
            while result == nil {
                if !lock.wait(until: deadline) { break }
            }
            return result
        }
    }
}

enum WriterRequestError: Error, CustomStringConvertible {
    /// The engine is shut down (or shutting down): nothing more is written.
    case closed
    /// It waited for a batch that never brought what it needed.
    case timedOut
    /// It rode a batch, and what it needs was not in the file even then.
    case missingRow
    /// The host is stopping (``Engine/Options/stopWaiting``): the caller stopped waiting;
    /// the request may still run.
    case interrupted

    var description: String {
        switch self {
        case .closed: "the engine is shut down"
        case .timedOut: "timed out waiting for the row it needs"
        case .missingRow: "the row it needs is not in the file"
        case .interrupted: "the host is stopping: stopped waiting for the writer"
        }
    }
}

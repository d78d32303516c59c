import Foundation
import Logging

/// What a handler gets: the job, and its cancellation.
public struct JobContext: Sendable {
    public let job: Job
    let token: CancellationToken

    /// The job was cancelled, or its entity despawned, while it ran: stop; its result is dropped.
    public var isCancelled: Bool { token.isCancelled }

    /// Throws ``JobError/cancelled`` if the job was cancelled.
    public func checkCancellation() throws {
        if token.isCancelled { throw JobError.cancelled }
    }
}

/// Runs a job; throwing fails it with the error's description (it runs again after a backoff).
public typealias JobHandler = @Sendable (JobContext) throws -> Void

/// The threads that run jobs (``Engine/startWorkers(_:)``): each claims the next runnable
/// job of a kind it has a handler for, runs the handler, and completes or fails the job.
/// Idle workers wait until an enqueue, a retry or a resume wakes them, or a failed job's
/// backoff may have passed (they look again every `pollInterval`).
///
/// States: created ──start──▶ running ──stop──▶ stopped. `stop` waits for running handlers
/// up to a timeout; jobs still running then go back to pending (their run not counted),
/// for the next session. Cancellation is cooperative: a handler reads
/// ``JobContext/isCancelled``.
final class WorkerPool: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is guarded by `lock`; the rest is immutable.
    let queue: JobQueue
    let handlers: [String: JobHandler]
    let logger: Logger
    let pollInterval: Duration
    private let lock = Lock()
    private var stopping = false
    private var active = 0
    /// Bumped by every wake: a worker that saw nothing to do waits only if nothing changed since.
    private var wakes = 0
    /// Times a worker looked for a job (claimed one, found none, or saw the queue paused).
    private var looksTaken = 0

    var looks: Int { lock.withLock { looksTaken } }
    /// ``stop(timeout:stopWaiting:)`` was called: the workers end after their job.
    var isStopping: Bool { lock.withLock { stopping } }

    init(queue: JobQueue, handlers: [String: JobHandler], logger: Logger, pollInterval: Duration = .seconds(1)) {
        self.queue = queue
        self.handlers = handlers
        self.logger = logger
        self.pollInterval = pollInterval
    }

    func start(workers: Int) {
        lock.withLock { active = workers }
        for n in 0 ..< workers {
            let thread = Thread { [self] in run() }
            thread.name = "strata.worker.\(n)"
            thread.start()
        }
    }

    /// Something became runnable: idle workers look again.
    func wake() {
        lock.withLock {
            wakes += 1
            lock.broadcast()
        }
    }

    /// Stops taking jobs and waits up to `timeout` for the running ones. Returns the ids
    /// of the jobs still running then.
    /// `stopWaiting`: polled every 100 ms; true ends the wait at once (the host is told
    /// to stop again: ``Engine/Options/stopWaiting``).
    func stop(timeout: Duration, stopWaiting: () -> Bool = { false }) -> [Job.ID] {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        lock.withLock {
            stopping = true
            lock.broadcast()
            while active > 0 && Date() < deadline && !stopWaiting() {
                _ = lock.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.1)))
            }
        }
        return queue.runningIDs
    }

    private func run() {
        let kinds = handlers.keys.sorted()
        while true {
            let seen = lock.withLock { stopping ? -1 : wakes }
            if seen < 0 { break }
            var claimed: [(job: Job, entity: EntityNumber)] = []
            if !queue.isPaused {
                do {
                    claimed = try queue.claimNumbered(kinds: kinds, limit: 1)
                } catch {
                    if case WriterRequestError.closed = error { break }
                    logger.error("jobs: claim failed: \(error)")
                }
            }
            lock.withLock { looksTaken += 1 }
            guard let (job, entity) = claimed.first else {
                // Nothing to do: wait for a wake (unless one came meanwhile) or the poll.
                lock.withLock {
                    if !stopping && wakes == seen { lock.wait(until: Date(timeIntervalSinceNow: pollInterval.seconds)) }
                }
                continue
            }
            runJob(job, entity: entity)
        }
        lock.withLock {
            active -= 1
            lock.broadcast()
        }
    }

    private func runJob(_ job: Job, entity: EntityNumber) {
        let token = CancellationToken()
        queue.didStart(job.id, entity: entity, token: token)
        defer { queue.didFinish(job.id) }
        var failure: String?
        do {
            // Claimed by its kind, so it has a handler; a failure if not, never a trap.
            if let handler = handlers[job.kind] {
                try handler(JobContext(job: job, token: token))
            } else {
                failure = "no handler for the kind \(job.kind)"
            }
        } catch {
            failure = "\(error)"
        }
        if token.isCancelled { return }   // its row is gone: nothing to record
        do {
            if let failure {
                let status = try queue.fail(job.id, error: failure)
                logger.warning("jobs: \(job.kind) #\(job.id) failed (run \(job.attempts)): \(failure); now \(status?.rawValue ?? "gone")")
            } else {
                try queue.complete(job.id)
            }
        } catch {
            // The engine is shutting down: the job stays processing in the file, and the next
            // open marks it interrupted; it runs again.
            logger.error("jobs: could not record the end of \(job.kind) #\(job.id): \(error)")
        }
    }
}

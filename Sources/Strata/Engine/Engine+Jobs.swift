import Foundation

/// The job queue's worker pool and its pause, on the engine. Tick thread (the queue
/// itself, ``Engine/jobs``, is callable from any thread).
///
/// ```swift
/// engine.registerJobHandler("render.thumbnail") { context in
///     let image = render(context.job.payload)
///     try context.checkCancellation()
///     try engine.assets.write(image, for: context.job.entity)
/// }
/// engine.startWorkers()                                      // `[jobs] workers` threads
/// engine.jobs.enqueueSoon("render.thumbnail", for: strokeID) // from the tick thread
/// ```
extension Engine {
    /// The settings key that keeps the queue paused across restarts.
    public static let jobsPausedKey = "jobs.paused"

    /// Registers the handler of a kind of job. Before ``startWorkers(_:)``.
    public func registerJobHandler(_ kind: String, _ handler: @escaping JobHandler) {
        owner.check("Engine")
        precondition(workers.pool == nil, "register job handlers before startWorkers()")
        workers.handlers[kind] = handler
    }

    /// Starts `count` worker threads (`[jobs] workers` if nil) running the registered
    /// handlers. A shutdown stops them (``JobsConfig/shutdownTimeout``).
    public func startWorkers(_ count: Int? = nil) {
        owner.check("Engine")
        guard workers.pool == nil, !isShutDown else { return }
        let pool = WorkerPool(queue: jobs, handlers: workers.handlers, logger: logger)
        jobs.onRunnable = { [weak pool] in pool?.wake() }
        workers.pool = pool
        pool.start(workers: count ?? config.jobs.workers)
    }

    /// Workers take no more jobs (running ones finish). Kept in the document's settings
    /// (`jobs.paused`), written with the next critical flush: a restart stays paused.
    public func pauseJobs() {
        owner.check("Engine")
        jobs.setPaused(true)
        world.setSetting(.boolean(true), for: Self.jobsPausedKey)
        flush(reason: .majorAction)
    }

    /// Workers take jobs again.
    public func resumeJobs() {
        owner.check("Engine")
        jobs.setPaused(false)
        world.setSetting(nil, for: Self.jobsPausedKey)
        flush(reason: .majorAction)
    }

    /// Stops the pool, waiting up to `shutdown_timeout_secs` for running jobs; those
    /// still running go back to pending, their run not counted.
    func stopWorkers() {
        guard let pool = workers.pool else { return }
        workers.pool = nil
        let stuck = pool.stop(timeout: config.jobs.shutdownTimeout, stopWaiting: options.stopWaiting)
        guard !stuck.isEmpty else { return }
        logger.warning("jobs: \(stuck.count) still running at shutdown: left pending for the next session")
        _ = try? jobs.perform(.full) { db in try JobRows.release(db, ids: stuck) }
    }
}

/// The engine's job workers: the handlers registered by kind, and the pool running them
/// once started. Tick thread.
struct JobWorkers {
    var handlers: [String: JobHandler] = [:]
    var pool: WorkerPool?
}

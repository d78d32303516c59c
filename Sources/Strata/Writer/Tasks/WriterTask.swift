/// Background work the writer does between batches, one bounded step at a time: the idle
/// integrity check (``IntegrityCheckTask``), compaction (``CompactionTask``), maintenance
/// (``MaintenanceTask``), backups (``BackupTask``), asked in that order. Each owns its settings
/// and state and is given the ``WriterContext`` when it is made; what a task may ask of the
/// writer itself is lent there (``CheckpointHold``), never the writer. The loop asks the tasks in order before each wait;
/// the first with a step due makes the wait end at once (the writer still looks at the
/// hand-off first), then runs its step. A new kind of background work is a new type in
/// a file of its own and one entry in `Writer.tasks`, not a branch in the loop.
///
/// Writer thread.
protocol WriterTask: AnyObject {
    /// Whether a step is due now. Called before each wait; may start a round.
    func stepDue() -> Bool
    /// Runs the step found due (one transaction of about `step_budget_ms`).
    func runStep()
    /// When a failed step is to be tried again (the wait ends then), on the writer's clock.
    var retryAt: Instant? { get }
    /// The writer's loop has ended: nothing more runs (callers waiting are told).
    func writerFinished()
}

extension WriterTask {
    var retryAt: Instant? { nil }
    func writerFinished() {}
}

/// A task that works in rounds of bounded steps, which another thread may also ask for and
/// wait on (`compactNow()`, `maintainNow()`: ``forced``). It says which step is next; the
/// protocol keeps the step found due between the loop's two questions.
protocol RoundTask: WriterTask {
    associatedtype Step
    var context: WriterContext { get }
    var forced: ForcedRounds { get }
    /// The step the last `stepDue()` found, for `runStep()`.
    var dueStep: Step? { get set }
    /// Failed steps in a row, and when the next is tried (``WriterTask/retryAt``).
    var failures: Int { get set }
    var retryAt: Instant? { get set }
    /// The step to run now, if any (may start a round, forced or not). Not asked while a
    /// failed step waits for its retry.
    func nextStep() -> Step?
    func run(_ step: Step)
}

extension RoundTask {
    func stepDue() -> Bool {
        if let retryAt {
            guard context.clock.now() >= retryAt else { return false }
            self.retryAt = nil
        }
        dueStep = nextStep()
        return dueStep != nil
    }

    func runStep() {
        if let dueStep { run(dueStep) }
        dueStep = nil
    }

    func writerFinished() {
        forced.close()
    }

    /// A step failed with `error`: counted, its retry scheduled (doubling backoff on the
    /// writer's clock). Returns the error to log, or nil when it says the file is corrupt
    /// (reported: the writer stops writing to it).
    func stepFailed(_ error: Error) -> StoreError? {
        failures += 1
        retryAt = context.clock.now() + context.retryBackoff(after: failures)
        let storeError = StoreError(.write, wrapping: error, path: context.store.location.path)
        return context.reportIfCorrupt(storeError) ? nil : storeError
    }

    /// Asks for a round now, wakes the writer, and waits until it is done. False if
    /// `timeout` passed first, the round failed, or the writer stopped. Any thread.
    func runNow(timeout: Duration) -> Bool {
        forced.requestAndWait(timeout: timeout) { context.buffer.nudge() }
    }
}

/// Background work the writer does between batches, one bounded step at a time: the idle
/// integrity check (``IntegrityCheckTask``), compaction (``CompactionTask``), maintenance
/// (``MaintenanceTask``), asked in that order. Each owns its settings and state and is given the
/// ``WriterContext`` when it is made. The loop asks the tasks in order before each wait;
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

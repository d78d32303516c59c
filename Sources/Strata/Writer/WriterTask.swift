import Foundation

/// Background work the writer does between batches, one bounded step at a time
/// (`Writer.tasks`: compaction, then maintenance). The loop asks the tasks in order before
/// each wait; the first with a step due makes the wait end at once (the writer still looks
/// at the hand-off first), then runs its step. A new kind of background work adds a task
/// to that list, not a branch in the loop.
///
/// Writer thread.
protocol WriterTask: AnyObject {
    /// Whether a step is due now. Called before each wait; may start a round.
    func stepDue() -> Bool
    /// Runs the step found due (one transaction of about `step_budget_ms`).
    func runStep()
    /// When a failed step is to be tried again (the wait ends then), if one failed.
    var retryAt: Date? { get }
}

/// A task made of the writer's own functions: `due` finds the step to run now (nil: none),
/// `run` runs it, `retry` says when a failed one is tried again. Compaction
/// (`Writer+Compaction.swift`) and maintenance (`Writer+Maintenance.swift`) keep their state
/// in the writer for now.
final class WriterStepTask<Step>: WriterTask {
    private let due: () -> Step?
    private let run: (Step) -> Void
    private let retry: () -> Date?
    private var step: Step?

    init(due: @escaping () -> Step?, run: @escaping (Step) -> Void, retry: @escaping () -> Date?) {
        self.due = due
        self.run = run
        self.retry = retry
    }

    func stepDue() -> Bool {
        step = due()
        return step != nil
    }

    func runStep() {
        if let step { run(step) }
        step = nil
    }

    var retryAt: Date? { retry() }
}

import Foundation

/// Background work the writer does between batches, one bounded step at a time:
/// compaction (``CompactionTask``) and maintenance (``MaintenanceTask``). The loop asks the
/// tasks in order before each wait; the first with a step due makes the wait end at once
/// (the writer still looks at the hand-off first), then runs its step. A new kind of
/// background work adds a task here and a line in `Writer.tasks`, not a branch in the loop.
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

/// Folds the segment log into the base rows by power (`Writer+Compaction.swift` holds
/// its state and its steps).
final class CompactionTask: WriterTask {
    private unowned let writer: Writer
    private var method: CompactionPolicy.Method?

    init(writer: Writer) { self.writer = writer }

    func stepDue() -> Bool {
        method = writer.compactionDue()
        return method != nil
    }

    func runStep() {
        if let method { writer.runCompactionStep(method) }
        method = nil
    }

    var retryAt: Date? { writer.compactionRetryAt }
}

/// Retention, free pages and statistics by power (`Writer+Maintenance.swift` holds its
/// state and its steps).
final class MaintenanceTask: WriterTask {
    private unowned let writer: Writer
    private var task: MaintenancePolicy.Task?

    init(writer: Writer) { self.writer = writer }

    func stepDue() -> Bool {
        task = writer.maintenanceDue()
        return task != nil
    }

    func runStep() {
        if let task { writer.runMaintenanceStep(task) }
        task = nil
    }

    var retryAt: Date? { writer.maintenance.retryAt }
}

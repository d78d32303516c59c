import Foundation

/// One backup to make: where, and who is told how it went.
struct BackupRequest: Sendable {
    let target: BackupTarget
    /// Made by `[backup]`'s schedule (retention follows it), not asked for.
    var scheduled = false
    /// The VFS the copy is written through (tests inject faults); nil: the default.
    var vfs: String?
    /// Pages of the first step, copied as pages or as the file's bytes (later ones adapt to
    /// `[backup] step_budget_ms`).
    var pagesPerStep: Int32 = 256
    /// Called on the writer thread after each step that did not finish the copy, with the
    /// steps so far (tests hold the writer there to commit a batch between two steps).
    var afterStep: (@Sendable (Int) -> Void)?
    /// Called once, with the report or the error: on the thread that verified the copy,
    /// or the writer's when it failed before that.
    let completion: @Sendable (Result<BackupReport, any Error>) -> Void

    init(target: BackupTarget, scheduled: Bool = false, vfs: String? = nil,
         completion: @escaping @Sendable (Result<BackupReport, any Error>) -> Void) {
        self.target = target
        self.scheduled = scheduled
        self.vfs = vfs
        self.completion = completion
    }
}

/// Backups asked for and not started yet, in order; and how the scheduled ones went.
/// The asking threads, the finishing threads and the writer meet here only.
final class BackupRequests: @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `lock`.
    private let lock = Lock()
    private var waiting: [BackupRequest] = []
    private var closed = false
    private var scheduledFailures = 0

    /// Queues `request`; false if the writer has finished (nothing more is made).
    func add(_ request: BackupRequest) -> Bool {
        lock.withLock {
            guard !closed else { return false }
            waiting.append(request)
            return true
        }
    }

    var hasWaiting: Bool { lock.withLock { !waiting.isEmpty } }

    func next() -> BackupRequest? {
        lock.withLock { waiting.isEmpty ? nil : waiting.removeFirst() }
    }

    /// No more requests; returns those that were waiting.
    func close() -> [BackupRequest] {
        lock.withLock {
            closed = true
            defer { waiting = [] }
            return waiting
        }
    }

    /// A scheduled backup finished (a finishing thread).
    func noteScheduled(succeeded: Bool) {
        lock.withLock { scheduledFailures = succeeded ? 0 : scheduledFailures + 1 }
    }

    /// Scheduled backups that failed since the last that did not.
    var failedInARow: Int { lock.withLock { scheduledFailures } }
}

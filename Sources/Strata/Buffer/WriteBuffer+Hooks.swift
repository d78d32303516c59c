/// Who the hand-off tells of commits (the job queue of deletions, the sync of operations),
/// and what callers waiting on the writer ask (stop now? the file is corrupt), behind a
/// lock of their own. Set at open; read on the writer thread and by waiting callers.
final class WriteBufferHooks: @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `lock`.
    fileprivate let lock = Lock()
    /// Told of the entities each commit deleted (the job queue cancels their running jobs).
    fileprivate var deletionListener: (@Sendable ([EntityNumber]) -> Void)?
    /// Told of the operations each commit logged (the sync pushes them at once).
    fileprivate var operationsListener: (@Sendable ([LoggedOperation]) -> Void)?
    /// Polled by callers waiting on the writer (``WriterLane``): true ends their wait
    /// (the host is stopping: ``Engine/Options/stopWaiting``).
    fileprivate var stopWaiting: @Sendable () -> Bool = { false }
    /// Called by a caller waiting on the writer while the file is reported corrupt: the
    /// engine replaces it there and then if the caller is its tick thread (else the tick
    /// loop does, at its next tick).
    fileprivate var corruptionWhileWaiting: (@Sendable () -> Void)?
}

extension WriteBuffer {
    /// Sets who is told of the entities each commit deletes. Before the writer starts.
    func setDeletionListener(_ listener: @escaping @Sendable ([EntityNumber]) -> Void) {
        hooks.lock.withLock { hooks.deletionListener = listener }
    }

    /// A commit deleted these entities. Writer thread.
    func notifyDeleted(_ numbers: [EntityNumber]) {
        hooks.lock.withLock { hooks.deletionListener }?(numbers)
    }

    /// Sets (or clears) who is told when a commit logged operations. Any thread.
    func setOperationsListener(_ listener: (@Sendable ([LoggedOperation]) -> Void)?) {
        hooks.lock.withLock { hooks.operationsListener = listener }
    }

    /// A commit logged these operations. Writer thread.
    func notifyCommitted(_ operations: [LoggedOperation]) {
        hooks.lock.withLock { hooks.operationsListener }?(operations)
    }

    /// Installs the engine's answers for callers waiting on the writer (at open).
    func setWaitHooks(stop: @escaping @Sendable () -> Bool, corruption: @escaping @Sendable () -> Void) {
        hooks.lock.withLock {
            hooks.stopWaiting = stop
            hooks.corruptionWhileWaiting = corruption
        }
    }

    /// Whether a caller waiting on the writer should stop waiting now.
    var waitsShouldStop: Bool { hooks.lock.withLock { hooks.stopWaiting }() }

    /// A caller waiting on the writer found the file reported corrupt (see above).
    func noteCorruptionWhileWaiting() {
        guard reportedCorruption != nil, let hook = hooks.lock.withLock({ hooks.corruptionWhileWaiting }) else { return }
        hook()
    }
}

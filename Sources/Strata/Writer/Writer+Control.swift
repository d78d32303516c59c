/// What other threads tell the writer while it runs: the WAL limit the power calls for,
/// the power and the user, and the rounds they ask for and wait on. Any thread; each
/// goes through a lock or the hand-off, never the writer's own state.
extension Writer {
    /// Changes the WAL size that forces a checkpoint (the desktop override is larger).
    func setMaxWalBytes(_ bytes: Int) {
        controlLock.withLock { maxWalBytesOverride = bytes }
    }

    var maxWalBytes: Int { controlLock.withLock { maxWalBytesOverride ?? settings.maxWalBytes } }

    /// The engine reports a change of power or activity (tick thread); the writer's tasks
    /// reconsider at once, even if it was parked.
    func setConditions(_ conditions: WriterConditions.Value) {
        context.conditions.set(conditions)
        buffer.nudge()
    }

    /// Folds every segment written so far into the base rows, and waits (``CompactionTask``).
    func compactNow(timeout: Duration) -> Bool { compaction.runNow(timeout: timeout) }

    /// Runs a maintenance round now, whatever the power, and waits (``MaintenanceTask``).
    func maintainNow(timeout: Duration) -> Bool { maintenance.runNow(timeout: timeout) }
}

/// Maintenance the host can ask for, and the rewrite of older payloads (tick thread).
/// The rounds themselves run on the writer (`MaintenanceTask.swift`).
extension Engine {
    /// Runs a maintenance round now (retention, free pages returned, `PRAGMA optimize`),
    /// after flushing every tier, whatever the power, and waits for it: for a host with
    /// time to spare, and `strata maintain`. The writer runs it in bounded steps,
    /// committing batches between them as usual.
    ///
    /// - Returns: false if `timeout` passed first (the round goes on).
    @discardableResult
    public func maintainNow(timeout: Duration = .seconds(120)) -> Bool {
        flushThenWait(timeout: timeout, for: writer.maintainNow(timeout:))
    }

    /// Rows the reload found written with an older payload version and not rewritten yet.
    public var olderPayloadsPending: Int { world.olderPayloads.count }

    /// With `[maintenance] rewrite_old_payloads`, while the user is idle on mains power:
    /// marks up to `rewrite_step_rows` keys of older payloads dirty, so the next flushes
    /// write them in this build's version (without it, each is rewritten at its next
    /// change). Runs at the end of a decision tick: the first once the user turns idle,
    /// then each tick that flushes the last step's rows.
    func rewriteOlderPayloadsIfIdle() {
        let config = config.maintenance
        guard config.rewriteOldPayloads, onMains, activity == .idle else { return }
        for _ in 0 ..< min(config.rewriteStepRows, world.olderPayloads.count) {
            let key = world.olderPayloads.removeLast()
            world.markDirty(column: key.column, entityIndex: key.entity)
        }
        if world.olderPayloads.isEmpty { logger.info("maintenance: every older payload rewritten") }
    }

    /// Folds the segment log into the base rows now, after flushing every tier, and
    /// waits for it: a maintenance call for a host that has time to spare (the level is
    /// loaded, the user went idle), or before copying the file. The writer runs it in
    /// bounded steps, committing batches between them as usual.
    ///
    /// - Returns: false if `timeout` passed first (the fold goes on), or compaction
    ///   cannot run (a segment that cannot be read is in the way: see ``metrics``).
    @discardableResult
    public func compactNow(timeout: Duration = .seconds(120)) -> Bool {
        flushThenWait(timeout: timeout, for: writer.compactNow(timeout:))
    }

    /// Flushes every tier, then waits for the writer's `work` for what is left of `timeout`
    /// (``compactNow(timeout:)``, ``maintainNow(timeout:)``).
    func flushThenWait(timeout: Duration, for work: (Duration) -> Bool) -> Bool {
        owner.check("Engine")
        guard !isShutDown else { return false }
        let started = clock.now()
        guard flushNow(reason: .explicitSave, timeout: timeout) else { return false }
        return work(timeout - clock.now().duration(since: started))
    }
}

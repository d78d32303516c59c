import Foundation
import GRDB

/// Compaction on the writer thread: between batches, one bounded step at a time.
///
/// The writer asks ``CompactionPolicy`` before each wait (`compactionDue()`); while a
/// method is due it looks at the slot without waiting and, finding it empty, runs one
/// step (``Compactor``), one transaction committed with `synchronous=NORMAL`: a step
/// changes where data lives, not what it is, so losing one to a power cut loses
/// nothing. A batch that arrives during a step waits for that step only, and each
/// step's byte budget adapts so that it takes about `compaction.step_budget_ms`.
extension Writer {
    /// What compaction needs to know from outside the writer: the power and the user.
    struct CompactionContext: Equatable, Sendable {
        /// Mains power or charging, and no power-saver profile.
        var onMains: Bool
        var idle: Bool

        init(onMains: Bool, idle: Bool) {
            self.onMains = onMains
            self.idle = idle
        }
    }

    /// The engine reports a change of power or activity (tick thread); the writer
    /// reconsiders at once, even if it was parked.
    func setCompactionContext(_ context: CompactionContext) {
        controlLock.withLock { compactionContext = context }
        buffer.nudge()
    }

    /// Folds every segment written so far into the base rows, and waits for it.
    /// Returns false if `timeout` passed first, or compaction cannot run (an unreadable
    /// segment in the way, a writer that stopped).
    func compactNow(timeout: Duration) -> Bool {
        requestAndWait(\.forcedCompactionsRequested, served: \.forcedCompactionsServed, timeout: timeout) {
            $0.state != .finished && !$0.forcedCompactionFailed
        }
    }

    /// Takes the next ticket of a forced round (`requested`), wakes the writer, and waits
    /// until `served` reaches it (the writer serves it under `controlLock`, broadcasting).
    /// False if `timeout` passed first, the writer stopped, or `succeeded` says the round failed.
    func requestAndWait(_ requested: ReferenceWritableKeyPath<Writer, Int>, served: KeyPath<Writer, Int>, timeout: Duration,
                        succeeded: (Writer) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        let ticket = controlLock.withLock {
            self[keyPath: requested] += 1
            return self[keyPath: requested]
        }
        buffer.nudge()
        return controlLock.withLock {
            while self[keyPath: served] < ticket && state != .finished {
                if !controlLock.wait(until: deadline) { return false }
            }
            return self[keyPath: served] >= ticket && succeeded(self)
        }
    }

    /// The method of the step to run now, if any. Writer thread.
    func compactionDue() -> CompactionPolicy.Method? {
        let (context, requested, served) = controlLock.withLock {
            (compactionContext, forcedCompactionsRequested, forcedCompactionsServed)
        }
        if requested > served && round?.forced != true {
            if let endID = segmentLog.lastID, segmentLog.blockedBy == nil {
                round = Compactor.Round(method: .fold, endID: endID, forced: true, ticket: requested)
            } else {
                serveForcedCompactions(upTo: requested, failed: segmentLog.blockedBy != nil)
            }
        }
        if let retry = compactionRetryAt {
            guard Date() >= retry else { return nil }
            compactionRetryAt = nil
        }
        guard segmentLog.blockedBy == nil else { return nil }
        if let round, round.forced { return round.method }
        guard let context else { return nil }
        return settings.compaction.decide(CompactionPolicy.Input(
            logBytes: segmentLog.bytes, liveBytes: segmentLog.liveBytes, liveKeys: segmentLog.liveKeys,
            basePages: segmentLog.basePages(pageSize: settings.pageSize), pageSize: settings.pageSize,
            onMains: context.onMains, idle: context.idle, round: round?.method))
    }

    /// Runs one step of the current round (starting one of `method` if none). Writer thread.
    func runCompactionStep(_ method: CompactionPolicy.Method) {
        if round == nil {
            guard let endID = segmentLog.lastID else { return }
            round = Compactor.Round(method: method, endID: endID)
        }
        let current = round!
        // Real time, whatever the engine's clock: the budget is about how long a batch waits.
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        let result: Compactor.StepResult
        do {
            let budget = compactionStepBytes[current.method]!
            result = try store.withConnection { db in
                var result = Compactor.StepResult()
                try db.inTransaction(.immediate) {
                    result = try Compactor.step(current, budgetBytes: budget, db)
                    return .commit
                }
                return result
            }
        } catch {
            compactionFailures += 1
            let wait = min(settings.retryInitialBackoff * (1 << min(compactionFailures - 1, 20)), settings.retryMaxBackoff)
            compactionRetryAt = Date(timeIntervalSinceNow: wait.seconds)
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            if reportIfCorrupt(storeError) { return }
            logger.warning("writer: compaction step failed (attempt \(compactionFailures)), will retry: \(storeError)")
            metrics.update { $0.failedCompactionSteps += 1 }
            if current.forced && compactionFailures >= settings.shutdownAttempts {
                round = nil
                serveForcedCompactions(upTo: current.ticket, failed: true)
            }
            return
        }
        compactionFailures = 0
        let elapsed = stopwatch.now().duration(since: started)
        adaptStepBudget(current.method, elapsed: elapsed, consumedBytes: result.consumedBytes)
        result.apply(to: segmentLog)

        // A waiting `compactNow()` is told only once the metrics show the step: its
        // caller reads them next.
        if let (id, damage) = result.blockedBy {
            // The reload skipped it already: set aside, the world is the same, and
            // compaction goes on around it. If even that fails, it stops before the row.
            if setAsideSegment(id, damage) { return }
            logger.error("writer: segment \(id) cannot be read (\(damage)) nor set aside: kept; compaction stops before it")
            segmentLog.blockedBy = id
            round = nil
            metrics.update { $0.recordBacklog(segmentLog) }
            if current.forced { serveForcedCompactions(upTo: current.ticket, failed: true) }
            return
        }
        round?.steps += 1
        if result.roundDone { round = nil }
        defer { if result.roundDone && current.forced { serveForcedCompactions(upTo: current.ticket, failed: false) } }
        let log = segmentLog
        metrics.update {
            $0.compactionSteps += 1
            if result.roundDone {
                $0.compactionRounds += 1
                $0.compactionsByMethod[current.method.rawValue, default: 0] += 1
            }
            $0.compactionBytesRead += result.consumedBytes
            $0.compactionBytesWritten += result.outputBytes
            $0.compactionKeysFolded += result.keysFolded
            $0.totalCompactionDuration += elapsed
            $0.maxCompactionStepDuration = max($0.maxCompactionStepDuration, elapsed)
            $0.recordBacklog(log)
        }
        metrics.timers.compactionStep(current.method.rawValue, took: elapsed)
        observer?.didCompact(CompactionRecord(
            at: clock.now(), duration: elapsed, method: current.method.rawValue, consumedRows: result.consumedRows,
            consumedBytes: result.consumedBytes, outputBytes: result.outputBytes, keysFolded: result.keysFolded,
            roundDone: result.roundDone))
    }

    /// Halves the method's byte budget after a step that took too long, doubles it after
    /// one that took less than a quarter of the time allowed.
    private func adaptStepBudget(_ method: CompactionPolicy.Method, elapsed: Duration, consumedBytes: Int) {
        let budget = settings.compactionStepBudget
        let bytes = compactionStepBytes[method]!
        if elapsed > budget {
            compactionStepBytes[method] = max(16 * 1024, bytes / 2)
        } else if elapsed < budget / 4 && consumedBytes >= bytes {
            compactionStepBytes[method] = min(64 * 1024 * 1024, bytes * 2)
        }
    }

    private func serveForcedCompactions(upTo ticket: Int, failed: Bool) {
        controlLock.withLock {
            forcedCompactionsServed = max(forcedCompactionsServed, ticket)
            forcedCompactionFailed = failed
            controlLock.broadcast()
        }
    }

    /// Moves the unreadable segment row `id` into `segments_set_aside`, with `damage` as
    /// its reason, in one transaction. Returns whether it did.
    private func setAsideSegment(_ id: Int64, _ damage: SegmentDamage) -> Bool {
        do {
            let (bytes, records, lastID) = try store.withConnection { db in
                try db.inTransaction(.immediate) {
                    try db.execute(sql: """
                        INSERT INTO segments_set_aside (id, format, record_count, checksum, created_at, records, reason, set_aside_at)
                        SELECT id, format, record_count, checksum, created_at, records, ?, ? FROM segments WHERE id = ?
                        """, arguments: [damage.description, unixMilliseconds(), id])
                    try db.execute(sql: "DELETE FROM segments WHERE id = ?", arguments: [id])
                    return .commit
                }
                let row = try Row.fetchOne(db, sql: "SELECT length(records) AS bytes, record_count FROM segments_set_aside WHERE id = ?",
                                           arguments: [id])
                let bytes: Int = row?["bytes"] ?? 0, records: Int = row?["record_count"] ?? 0
                return (bytes, records, try Int64.fetchOne(db, sql: "SELECT max(id) FROM segments"))
            }
            segmentLog.noteRows(removed: 1, bytes: bytes, records: records)
            segmentLog.unreadableRows = max(0, segmentLog.unreadableRows - 1)
            segmentLog.lastID = lastID
            if let current = round {
                if let lastID, current.endID > lastID { round?.endID = lastID }
                if lastID == nil {
                    round = nil
                    if current.forced { serveForcedCompactions(upTo: current.ticket, failed: false) }
                }
            }
            logger.error("writer: segment \(id) cannot be read (\(damage)): set aside in segments_set_aside (the world never had its changes); compaction goes on")
            metrics.update {
                $0.segmentsSetAside += 1
                $0.recordBacklog(segmentLog)
            }
            return true
        } catch {
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            if reportIfCorrupt(storeError) { return true }
            logger.warning("writer: could not set segment \(id) aside: \(storeError)")
            return false
        }
    }
}

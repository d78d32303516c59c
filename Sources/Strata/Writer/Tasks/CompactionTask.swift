import Foundation
import GRDB

/// Compaction on the writer thread: between batches, one bounded step at a time.
///
/// Before each wait the writer asks ``CompactionPolicy`` through this task (`stepDue()`);
/// while a method is due it looks at the slot without waiting and, finding it empty, runs
/// one step (``Compactor``), one transaction committed with `synchronous=NORMAL`: a step
/// changes where data lives, not what it is, so losing one to a power cut loses nothing.
/// A batch that arrives during a step waits for that step only, and each step's byte
/// budget adapts so that it takes about `compaction.step_budget_ms`. A segment that
/// cannot be read is set aside (`CompactionTask+SetAside.swift`).
///
/// Writer thread, but for ``forced`` (its own lock).
final class CompactionTask: RoundTask {
    let context: WriterContext
    let settings: Settings
    /// `compactNow()`: a fold of everything written so far, waited for.
    let forced = ForcedRounds()
    var round: Compactor.Round?
    /// Bytes of records a step consumes, per method (a fold's byte costs more than a
    /// merge's); each adapts to `settings.stepBudget`.
    var stepBytes: [CompactionPolicy.Method: Int] = [.merge: initialStepBytes, .fold: initialStepBytes]
    static let initialStepBytes = 256 * 1024
    var failures = 0
    var retryAt: Instant?
    var dueStep: CompactionPolicy.Method?

    /// What compaction is told at open: `[compaction]` and the `[history]` window it leaves alone.
    struct Settings {
        var policy: CompactionPolicy
        /// The time one step should take at most (its byte budget adapts to it).
        var stepBudget: Duration
        var history: HistoryConfig
        /// Each method's first byte budget (tests and benches start it small).
        var initialStepBytes = CompactionTask.initialStepBytes

        init(config: StrataConfig, options: Engine.Options) {
            policy = CompactionPolicy(config: config.compaction, forcedMethod: options.compactionMethod)
            stepBudget = config.compaction.stepBudget
            history = config.history
            initialStepBytes = options.compactionStepBytes
        }
    }

    init(_ context: WriterContext, _ settings: Settings) {
        self.context = context
        self.settings = settings
        for method in CompactionPolicy.Method.allCases { stepBytes[method] = settings.initialStepBytes }
    }

    var segmentLog: SegmentLog { context.segmentLog }

    /// The newest row compaction may consume: the last one, or with `[history]` the last one
    /// older than the window (`SegmentLog+Window.swift`); and the bytes up to it.
    func consumable() -> (endID: Int64?, bytes: Int) {
        let history = settings.history
        guard history.isOn else { return (segmentLog.lastID, segmentLog.bytes) }
        let cutoff = context.settings.wallClock() - Int64(history.keep.milliseconds)
        return segmentLog.outsideWindow(cutoff: cutoff, maxBytes: history.maxBytes)
    }

    /// Where a new round ends: the newest consumable row, or 0 (no row: a round of waiting
    /// spawns and despawns only) when there is none but some wait; nil when there is nothing to do.
    func roundEnd() -> Int64? {
        consumable().endID ?? (segmentLog.pendingEntities > 0 ? 0 : nil)
    }

    /// The method of the step to run now, if any.
    func nextStep() -> CompactionPolicy.Method? {
        if let requested = forced.pending, round?.forced != true {
            if let endID = roundEnd(), segmentLog.blockedBy == nil {
                round = Compactor.Round(method: .fold, endID: endID, forced: true, ticket: requested)
            } else {
                forced.serve(upTo: requested, failed: segmentLog.blockedBy != nil)
            }
        }
        let conditions = context.conditions.current
        guard segmentLog.blockedBy == nil else { return nil }
        if let round, round.forced { return round.method }
        guard let conditions else { return nil }
        // With a history window, what is in it does not count: it cannot be consumed.
        var (bytes, live) = (segmentLog.bytes, segmentLog.liveBytes)
        if settings.history.isOn && round == nil {
            bytes = consumable().bytes
            live = min(live, bytes)
        }
        if let method = settings.policy.decide(CompactionPolicy.Input(
            logBytes: bytes, liveBytes: live, liveKeys: segmentLog.liveKeys,
            basePages: segmentLog.basePages(pageSize: context.settings.pageSize), pageSize: context.settings.pageSize,
            onMains: conditions.onMains, idle: conditions.idle, round: round?.method)) {
            return method
        }
        // Spawns and despawns waiting for their rows (`PendingEntities`): written when idle,
        // or once there are many, by a round that consumes no segment (end 0).
        guard segmentLog.pendingEntities > 0,
              conditions.idle || segmentLog.pendingEntities >= Self.pendingEntitiesBound else { return nil }
        let pending = round ?? Compactor.Round(method: .fold, endID: 0)
        round = pending
        return pending.method
    }

    /// Waiting spawns and despawns past which they are written even while the user is
    /// active: the table stays a few dozen pages.
    static let pendingEntitiesBound = 4096

    /// Runs one step of the current round (starting one of `method` if none).
    func run(_ method: CompactionPolicy.Method) {
        let (store, metrics, logger) = (context.store, context.metrics, context.logger)
        let current: Compactor.Round
        if let round {
            current = round
        } else {
            guard let endID = roundEnd() else { return }
            current = Compactor.Round(method: method, endID: endID)
            round = current
        }
        // Real time, whatever the engine's clock: the budget is about how long a batch waits.
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        let result: Compactor.StepResult
        do {
            let budget = stepBytes[current.method] ?? Self.initialStepBytes
            result = try store.withConnection { db in
                var result = Compactor.StepResult()
                try db.inTransaction(.immediate) {
                    result = try Compactor.step(current, budgetBytes: budget, history: settings.history.isOn, db)
                    return .commit
                }
                return result
            }
        } catch {
            guard let storeError = stepFailed(error) else { return }
            logger.warning("writer: compaction step failed (attempt \(failures)), will retry: \(storeError)")
            metrics.update { $0.failedCompactionSteps += 1 }
            if current.forced && failures >= context.settings.shutdownAttempts {
                round = nil
                forced.serve(upTo: current.ticket, failed: true)
            }
            return
        }
        failures = 0
        let elapsed = stopwatch.now().duration(since: started)
        adaptStepBudget(current.method, elapsed: elapsed, consumedBytes: result.consumedBytes)
        result.apply(to: segmentLog)
        if result.unresolvedDropped > 0 {
            logger.error("writer: compaction dropped \(result.unresolvedDropped) records of live entities with their rows: each was coded against a payload the log no longer has (a segment row lost or set aside), so none could be decoded")
        }

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
            if current.forced { forced.serve(upTo: current.ticket, failed: true) }
            return
        }
        round?.steps += 1
        if result.roundDone { round = nil }
        defer { if result.roundDone && current.forced { forced.serve(upTo: current.ticket, failed: false) } }
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
        context.observer?.didCompact(CompactionRecord(
            at: context.clock.now(), duration: elapsed, method: current.method.rawValue, consumedRows: result.consumedRows,
            consumedBytes: result.consumedBytes, outputBytes: result.outputBytes, keysFolded: result.keysFolded,
            roundDone: result.roundDone))
    }

    /// Halves the method's byte budget after a step that took too long (not below 16 KB),
    /// doubles it after one that took less than a quarter of the time allowed.
    private func adaptStepBudget(_ method: CompactionPolicy.Method, elapsed: Duration, consumedBytes: Int) {
        let budget = settings.stepBudget
        let bytes = stepBytes[method] ?? Self.initialStepBytes
        if elapsed > budget {
            // Halved down to 16 KB, never raised (a budget set below it stays).
            stepBytes[method] = max(min(bytes, 16 * 1024), bytes / 2)
        } else if elapsed < budget / 4 && consumedBytes >= bytes {
            stepBytes[method] = min(64 * 1024 * 1024, bytes * 2)
        }
    }
}

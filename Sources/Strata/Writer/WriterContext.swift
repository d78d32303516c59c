import Foundation
import Logging

/// What the writer and its tasks share: the connection, the hand-off, where they report,
/// the one clock they read, the settings. A task (``WriterTask``) is given it when it is
/// made and needs nothing else from the writer. Writer thread, but for ``conditions``.
struct WriterContext {
    let store: Store
    let buffer: WriteBuffer
    let metrics: MetricsRecorder
    /// The writer's one clock (the engine's: virtual in tests). Every deadline the writer
    /// and its tasks keep is an instant on it; the hand-off's condition waits the interval.
    let clock: any StrataClock
    let logger: Logger
    let settings: Writer.Settings
    let observer: (any PersistenceObserver)?
    let segmentLog: SegmentLog
    /// The power and the user, as the engine last reported them.
    let conditions = WriterConditions()
    /// What a task may ask of the writer's checkpoints (a backup copying the file).
    let checkpoints = CheckpointHold()

    /// SQLITE_CORRUPT or SQLITE_NOTADB: the file is damaged. Reports it (the engine then
    /// replaces the file, `Engine+StoreReplacement.swift`) and returns true; the writer
    /// stops writing to it.
    @discardableResult
    func reportIfCorrupt(_ error: StoreError) -> Bool {
        guard error.isCorruption else { return false }
        if buffer.reportedCorruption == nil {
            logger.error("writer: the database is corrupt (\(error)); nothing more is written to it, the engine replaces it")
        }
        buffer.reportCorruption(error)
        return true
    }

    /// How long to wait before the next attempt after `failures` failed ones: doubling from
    /// `retry_initial_backoff_ms` up to `retry_max_backoff_ms`.
    func retryBackoff(after failures: Int, closing: Bool = false) -> Duration {
        WriterSchedule.backoff(after: failures, settings.backoff, closing: closing)
    }
}

/// What background work needs to know from outside the writer: the power source and the
/// user's activity. Set by the engine at its end of tick, read by the writer's tasks.
final class WriterConditions: @unchecked Sendable {
    // @unchecked Sendable: `value` is guarded by `lock`.
    struct Value: Equatable, Sendable {
        /// Mains power or charging, and no power-saver profile.
        var onMains: Bool
        var idle: Bool
    }

    private let lock = Lock()
    private var value: Value?

    /// Nil until the engine's first end of tick (only a forced round runs before that).
    var current: Value? { lock.withLock { value } }

    func set(_ new: Value) { lock.withLock { value = new } }
}

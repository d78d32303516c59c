import Foundation
import Logging

/// The history window (`Sources/Strata/History`, `[history] keep_secs`): the world as of
/// any flush in it, read through a connection of its own while the writer goes on, and
/// made current again by a rewind. Tick thread.
///
/// ```swift
/// let window = try engine.history()                         // the flushes kept, where it starts
/// let before = try engine.world(at: Date() - 30)            // a detached world, as it was 30 s ago
/// let report = try engine.rewind(to: Date() - 30)           // that, made current, as changes
/// ```
extension Engine {
    /// The flushes the document keeps and where the window starts.
    ///
    /// - Throws: ``HistoryError/noHistory(_:)`` when `[history] keep_secs` is 0 or no flush is
    ///   kept yet.
    public func history() throws -> HistoryWindow {
        owner.check("Engine")
        try requireHistory()
        guard let window = try store.location.readExisting({ try HistoryReader.window($0) }) else {
            throw HistoryError.noHistory("no flush kept yet")
        }
        return window
    }

    /// The world as the last flush at or before `time` left it: a detached ``World`` with
    /// this engine's component types, not persisted (changing it changes nothing). Changes
    /// not flushed yet are not in it; settings are not part of the history. The read runs on
    /// the calling thread, as a reload does (12–29 ms for a 10k-shape canvas here): call it
    /// where a pause is acceptable (a menu, a rewind the player asked for).
    ///
    /// - Throws: ``HistoryError`` when there is no history, or `time` is outside the window
    ///   (the error names its bounds).
    public func world(at time: Date) throws -> World {
        owner.check("Engine")
        try requireHistory()
        let milliseconds = Self.milliseconds(time)
        let types = world.componentTypes.filter { $0.tier != .ephemeral }
        let logger = logger
        return try store.location.readExisting { db in
            _ = try HistoryReader.requireWindow(holding: milliseconds, now: options.wallClock(), db)
            return try HistoryReader.world(at: milliseconds, types: types, db, logger: logger)
        }
    }

    /// Makes the world as it was at `time` (``world(at:)``) the current one, as changes:
    /// entities spawned since are despawned, those despawned since spawned again with their
    /// ids, values set back or removed. The changes are flushed by their tiers like any
    /// other, so the rewind is itself durable, kept in the history (a rewind can be
    /// rewound), and synced for replicated types. Ephemeral values stay as they are.
    ///
    /// - Throws: as ``world(at:)``; the world is then unchanged.
    @discardableResult
    public func rewind(to time: Date) throws -> RewindReport {
        let past = try world(at: time)
        var report = RewindReport(toMilliseconds: Self.milliseconds(time))
        world.adopt(past, into: &report)
        logger.info("history: \(report)")
        return report
    }

    /// At open: a window whose cap is more than the disk has free is said (the cap bounds
    /// it; the disk would bound it first).
    func checkHistoryWindow() {
        let history = config.history
        guard history.isOn, let free = (options.freeDiskSpace ?? DiskGuard.freeDiskSpace)(store.location.path),
              free < history.maxBytes else { return }
        logger.warning("""
            history: [history] max_mb (\(history.maxBytes >> 20) MB) is more than the disk has free (\(free >> 20) MB): \
            the window of keep_secs = \(Int(history.keep.seconds)) will be cut short by the disk, not by the cap
            """)
    }

    private func requireHistory() throws {
        guard config.history.isOn else { throw HistoryError.noHistory("[history] keep_secs is 0") }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
}

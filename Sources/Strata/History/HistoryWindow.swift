import Foundation

/// The past a document keeps (`[history] keep_secs`): the flushes of the window, and the
/// first instant the world can be rebuilt at. ``Engine/history()``, `strata history`.
public struct HistoryWindow: Sendable, Equatable, Codable {
    /// The earliest time the world can be rebuilt at (Unix ms): the later of the first flush
    /// kept and the newest change compaction folded.
    public var startMilliseconds: Int64
    /// The last flush kept (Unix ms).
    public var endMilliseconds: Int64
    /// The flushes that changed the world, oldest first.
    public var flushes: [HistoryFlush]
    /// Bytes of segment records in the window, and of the despawned entities it keeps.
    public var bytes: Int

    /// Whether the world can be rebuilt at `milliseconds` (between the start and `now`).
    public func contains(_ milliseconds: Int64, now: Int64) -> Bool {
        milliseconds >= startMilliseconds && milliseconds <= now
    }
}

/// One flush of the window: a commit that changed the world.
public struct HistoryFlush: Sendable, Equatable, Codable {
    /// When it committed (Unix ms): the world at this time includes it.
    public var atMilliseconds: Int64
    /// Why it was flushed (``FlushReason`` raw values).
    public var reasons: [String]
    /// Component values written (puts and removals), entities spawned and despawned.
    public var keys: Int
    public var spawns: Int
    public var despawns: Int
}

/// Why the world at a time cannot be given.
public enum HistoryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `[history] keep_secs` is 0, or the document has no flush kept yet.
    case noHistory(String)
    /// The time is before the window's start or after now.
    case outsideWindow(requested: Int64, start: Int64, end: Int64)
    /// Not a time (`strata inspect --at`): ISO 8601, or relative to now (`-30s`, `-5m`).
    case unreadableTime(String)
    /// A time that reads, but before 1970 or past the year 9999: no document holds it.
    case timeOutOfRange(String)

    public var description: String {
        switch self {
        case .noHistory(let why):
            return "no history: \(why)"
        case let .outsideWindow(requested, start, end):
            return "\(Self.format(requested)) is outside the history window, \(Self.format(start)) … \(Self.format(end))"
        case .unreadableTime(let text):
            return "\"\(text)\" is not a time: give an ISO 8601 time (2026-11-26T09:30:00Z) or one relative to now (-30s, -5m, -2h)"
        case .timeOutOfRange(let text):
            return "\"\(text)\" is before 1970 or past the year 9999: no document holds that time"
        }
    }

    /// ISO 8601, in UTC, with milliseconds.
    package static func format(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}

/// `[history]`: the window of the past the document keeps (`Sources/Strata/History`):
/// compaction folds only what is older, so the world as of any flush in it can be read
/// (``Engine/world(at:)``, `strata inspect --at`) and made current again
/// (``Engine/rewind(to:)``).
public struct HistoryConfig: Sendable, Equatable {
    /// `keep_secs`: how far back the window reaches; 0: no history (compaction folds as
    /// soon as it is due, despawns keep nothing).
    public var keep: Duration = .zero
    /// `max_mb`: the most the window may hold (segment records and despawned entities);
    /// past it, compaction folds the oldest flushes anyway and the window starts later.
    public var maxBytes = 64 * 1024 * 1024

    public init() {}

    /// The window is kept at all.
    public var isOn: Bool { keep > .zero }
}

extension StrataConfig {
    static func readHistory(_ r: inout ConfigReader) throws -> HistoryConfig {
        var c = HistoryConfig()
        c.keep = try r.duration("keep_secs", default: c.keep, unit: .seconds, allowZero: true, max: .seconds(30 * 86_400))
        c.maxBytes = try r.megabytes("max_mb", default: c.maxBytes)
        try r.rejectUnknownKeys(known: ["keep_secs", "max_mb"])
        return c
    }

    var renderedHistory: String {
        """
        [history]
        keep_secs = \(Int(history.keep.seconds))
        max_mb = \(history.maxBytes / 1024 / 1024)

        """
    }
}

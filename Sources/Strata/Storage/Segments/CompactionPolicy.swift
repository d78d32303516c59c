/// The pure decision "compact the segment log now, and how?" (docs/storage.md).
///
/// A function of the log's size and live records, the base table's size, the power
/// source and the user's activity; no I/O, tested over tables.
///
/// - On battery (discharging, or the power-saver profile): only past the hard cap,
///   `max_backlog_mb`: the reload time and file size must stay bounded.
/// - On mains or charging, the user idle: fold everything past `idle_backlog_mb`
///   (eager: the next reload is then the fastest it can be).
/// - On mains or charging, the user active: past `backlog_mb`.
/// - A round in progress goes on while the power allows compaction at all.
///
/// Which method, when it is ours to choose: the cheaper per byte the log grows by.
/// A *merge* rewrites the live records (the newest of each key) as one segment and drops
/// the rest: it writes `live` bytes, leaves `live` in the log, and comes back after
/// `cap − live` more bytes. A *fold* writes them into the base rows: it writes the base
/// pages they live on (a page per key while keys are few, the whole table when they are
/// many), empties the log, and comes back after `cap` bytes. When the same hot keys
/// change all the time over a large world, merges cost a fraction of a byte per byte
/// appended and folds hundreds; when most of the log is live, only a fold empties it.
package struct CompactionPolicy: Sendable, Equatable {
    public enum Method: String, Sendable, Equatable, CaseIterable {
        /// Live records rewritten as one segment, the rest dropped.
        case merge
        /// Live records written into the base rows, the segments dropped.
        case fold
    }

    /// `idle_backlog_mb`.
    public var idleBacklogBytes: Int
    /// `backlog_mb`.
    public var backlogBytes: Int
    /// `max_backlog_mb`.
    public var maxBacklogBytes: Int
    /// Always this method (benchmarks and tests); nil: the cheaper one.
    public var forcedMethod: Method?

    public init(config: CompactionConfig, forcedMethod: Method? = nil) {
        idleBacklogBytes = config.idleBacklogBytes
        backlogBytes = config.backlogBytes
        maxBacklogBytes = config.maxBacklogBytes
        self.forcedMethod = forcedMethod
    }

    /// What the policy looks at.
    public struct Input: Sendable, Equatable {
        /// Bytes of records in the log.
        public var logBytes: Int
        /// Bytes of its live records (the newest of each key).
        public var liveBytes: Int
        public var liveKeys: Int
        /// Estimated pages of the base table, and the page size.
        public var basePages: Int
        public var pageSize: Int
        /// On mains power or charging, and not in power-saver.
        public var onMains: Bool
        public var idle: Bool
        /// The method of the round in progress, if any.
        public var round: Method?

        public init(logBytes: Int, liveBytes: Int, liveKeys: Int, basePages: Int, pageSize: Int, onMains: Bool, idle: Bool,
                    round: Method? = nil) {
            self.logBytes = logBytes
            self.liveBytes = liveBytes
            self.liveKeys = liveKeys
            self.basePages = basePages
            self.pageSize = pageSize
            self.onMains = onMains
            self.idle = idle
            self.round = round
        }
    }

    /// The method to run a step of now, or nil.
    public func decide(_ input: Input) -> Method? {
        guard input.logBytes > 0 else { return nil }
        let pastHardCap = input.logBytes >= maxBacklogBytes
        guard input.onMains || pastHardCap else { return nil }
        if let round = input.round { return round }
        if input.onMains && input.idle && input.logBytes >= idleBacklogBytes { return forcedMethod ?? .fold }
        let cap = input.onMains ? backlogBytes : maxBacklogBytes
        guard input.logBytes >= cap else { return nil }
        return forcedMethod ?? cheaper(input, cap: cap)
    }

    /// The method that writes fewer bytes per byte appended to the log (see the type's comment).
    func cheaper(_ input: Input, cap: Int) -> Method {
        // A merge that leaves the log at its cap makes no progress.
        guard input.liveBytes < cap else { return .fold }
        let mergeCost = Double(input.liveBytes) / Double(cap - input.liveBytes)
        let foldCost = Double(min(input.liveKeys, input.basePages) * input.pageSize) / Double(cap)
        return foldCost <= mergeCost ? .fold : .merge
    }
}

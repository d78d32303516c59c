/// A committed batch, as an observer sees it.
public struct CommitRecord: Sendable {
    /// Per tier in the batch, when it was drained: every change of that tier made up to
    /// this instant is in the database now.
    public var drained: [Tier: Instant]
    public var committedAt: Instant
    /// FULL: the WAL was synced by this commit (power-loss safe). NORMAL: crash-safe only,
    /// until the next WAL sync (a FULL commit or a checkpoint).
    public var durability: Durability
    public var rows: Int
    public var reasons: FlushReasonSet
}

/// A checkpoint, as an observer sees it.
public struct CheckpointRecord: Sendable {
    public var at: Instant
    /// `PASSIVE`, `RESTART` or `TRUNCATE`.
    public var mode: String
    /// Whether every WAL frame was copied (and so synced to the database file).
    public var complete: Bool
}

/// A compaction step, as an observer sees it.
public struct CompactionRecord: Sendable {
    public var at: Instant
    public var duration: Duration
    /// `merge` or `fold`.
    public var method: String
    /// Segment rows consumed, and the bytes of records in them.
    public var consumedRows: Int
    public var consumedBytes: Int
    /// Bytes of records written back as a merged segment.
    public var outputBytes: Int
    /// Keys written into base rows.
    public var keysFolded: Int
    /// The step finished its round.
    public var roundDone: Bool
}

/// Watches the writer: every commit, checkpoint and compaction step, for tools that
/// measure durability (the benchmark runner) or hosts that log it.
///
/// Called on the writer thread, after the fact: keep it short and never call the engine.
public protocol PersistenceObserver: AnyObject, Sendable {
    func didCommit(_ record: CommitRecord)
    func didCheckpoint(_ record: CheckpointRecord)
    func didCompact(_ record: CompactionRecord)
}

extension PersistenceObserver {
    public func didCompact(_ record: CompactionRecord) {}
}

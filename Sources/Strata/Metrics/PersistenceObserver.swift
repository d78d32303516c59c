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

/// Watches the writer: every commit and checkpoint, for tools that measure durability
/// (the benchmark runner) or hosts that log it.
///
/// Called on the writer thread, after the fact: keep it short and never call the engine.
public protocol PersistenceObserver: AnyObject, Sendable {
    func didCommit(_ record: CommitRecord)
    func didCheckpoint(_ record: CheckpointRecord)
}

/// The pure decision "checkpoint now, and how hard?" (the specification, *Checkpoints and the WAL*).
///
/// PASSIVE every `checkpoint_interval_secs`, or as soon as the un-checkpointed WAL would
/// pass `max_wal_size_mb` with one more commit like the last one (so that the WAL stays
/// inside its limit, and its alert, rather than crossing it by a commit before the
/// checkpoint). A PASSIVE checkpoint that readers keep from finishing
/// leaves frames behind; after two such in a row the writer escalates to RESTART,
/// and after four, or after one with the WAL at four times its limit, to TRUNCATE, so
/// the WAL cannot grow without bound. One large batch alone never escalates.
struct CheckpointPolicy: Sendable, Equatable {
    enum Mode: String, Sendable {
        case passive = "PASSIVE"
        case restart = "RESTART"
        case truncate = "TRUNCATE"
    }

    var interval: Duration
    var maxWalBytes: Int

    /// The checkpoint to run, or nil. `pendingWalBytes` is what the WAL holds beyond the
    /// last checkpoint; `lastCommitBytes` what the last commit added to it (the next is
    /// expected to be alike); `incompleteStreak` counts consecutive checkpoints that fell
    /// short; `forced` asks for one now (an app transition), however recent the last.
    func decide(now: Instant, lastCheckpoint: Instant, pendingWalBytes: Int, lastCommitBytes: Int = 0, incompleteStreak: Int,
                forced: Bool = false) -> Mode? {
        guard pendingWalBytes > 0 else { return nil }
        let tooBig = pendingWalBytes + lastCommitBytes >= maxWalBytes
        guard forced || tooBig || now >= lastCheckpoint + interval else { return nil }
        if incompleteStreak >= 4 || (incompleteStreak >= 1 && pendingWalBytes >= 4 * maxWalBytes) { return .truncate }
        if incompleteStreak >= 2 { return .restart }
        return .passive
    }
}

import GRDB

/// Bulk batches: a batch of at least ``WriteBatch/bulkRows`` rows (the first save of a large world,
/// a level loaded, every entity moved at once) commits through a rollback journal instead
/// of the WAL.
///
/// Why: in WAL mode every page a transaction writes is written twice, once into the WAL
/// and once more into the file at the next checkpoint; a batch of a few hundred MB also
/// grows the WAL that far past its limit. With a rollback journal, SQLite copies into the
/// journal only the pages that existed before the transaction and that it changes, and
/// writes every page once, in place: the pages it appends to the file (all of a first
/// save's) are written once (<https://sqlite.org/atomiccommit.html>). The commit is as
/// atomic and as durable (`synchronous=FULL`: the journal is synced before the file is
/// written, the file before the journal goes): a crash or a power cut leaves the file
/// before the batch or after it, and a crash in the middle leaves a hot journal that the
/// next open rolls back.
///
/// The switch needs the file to itself (`PRAGMA journal_mode` takes an exclusive lock and
/// checkpoints the WAL first): when another connection is reading (`strata inspect`, the
/// idle integrity check), the batch commits through the WAL as any other. The journal mode
/// goes back to WAL right after the commit; if that fails (a full disk), before the next.
///
/// Writer thread.
extension Writer {
    /// Leaves WAL mode for a rollback journal (DELETE). False, changing nothing, if SQLite
    /// would not (another connection has the file open, or the checkpoint it runs first
    /// could not finish).
    func leaveWAL(_ db: Database) -> Bool {
        guard let mode = try? String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE"), mode == "delete" else { return false }
        walFrames.frames = 0   // leaving WAL mode checkpointed it, and removed it
        walFrames.lastCommitFrames = 0
        lastCheckpoint = clock.now()
        metrics.update { $0.bulkCommits += 1 }
        return true
    }

    /// Back to WAL mode after a bulk commit. If that fails, `walModeLost` says so and the
    /// next commit tries again first (a commit in rollback mode is as safe, only not what
    /// the rest of the engine expects).
    func returnToWAL(_ db: Database) {
        let mode = try? String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
        walModeLost = mode != "wal"
        if walModeLost { logger.warning("writer: could not return to WAL mode after a bulk commit (\(mode ?? "error")); trying again before the next commit") }
    }
}

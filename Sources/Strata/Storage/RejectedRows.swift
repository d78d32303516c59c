import GRDB

/// Deletes the rows of `rejected_writes` the host replayed, in the transaction that
/// commits (or follows) their replayed values. Writer thread.
final class RejectedRowsPart: BatchPart {
    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        for id in batch.replayedRejections {
            try db.cachedStatement(sql: "DELETE FROM rejected_writes WHERE id = ?").execute(arguments: [id])
        }
    }

    func didCommit() {}
    func didRollBack() {}
}

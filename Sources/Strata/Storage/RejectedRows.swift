import GRDB

/// Deletes the rows of `rejected_writes` the host replayed, in the transaction that
/// commits (or follows) their replayed values. Writer thread.
final class RejectedRowsPart: BatchPart {
    let sections: [BatchSection] = [.replayedRejections]

    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        for id in batch.replayedRejections {
            try db.cachedStatement(sql: "DELETE FROM rejected_writes WHERE id = ?").execute(arguments: [id])
        }
    }

    func didCommit() {}
    func didRollBack() {}
}

/// The `rejected_writes` table's retention (`Maintenance/`). Writer thread.
enum RejectedRows {
    /// Deletes at most `limit` parked rows rejected before `before` (Unix ms). Returns how many.
    static func deleteParked(_ db: Database, before: Int64, limit: Int) throws -> Int {
        try db.execute(sql: """
            DELETE FROM rejected_writes WHERE id IN (SELECT id FROM rejected_writes WHERE rejected_at < ? LIMIT ?)
            """, arguments: [before, limit])
        return db.changesCount
    }
}

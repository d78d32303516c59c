import GRDB

/// A kind of data a batch carries, written by the writer inside the batch's one
/// transaction. The writer commits; the parts know their tables.
///
/// Adding a kind of data that rides batches adds a section (``BatchSection``), a part and a
/// migration, not a branch in `Writer+Commit.swift`. Parts run in the order the writer
/// lists them, which is the sections' order (`BatchSectionTests`); each is told whether
/// the transaction committed, so state it prepared inside the transaction (cached ids,
/// sequence numbers) only becomes final then.
///
/// Writer thread only.
protocol BatchPart: AnyObject {
    /// The sections of a batch it writes, in order.
    var sections: [BatchSection] { get }
    /// Writes this part of `batch`. Inside the transaction; throwing rolls it back.
    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws
    /// The transaction committed.
    func didCommit()
    /// The transaction rolled back: forget what `write` prepared.
    func didRollBack()
}

/// The parts a writer commits batches with, one of each, in ``BatchSection`` order: the
/// one list a kind of data the tick thread batches adds its part to.
enum BatchParts {
    static func make(operationLog: OperationLogConfig, segmentLog: SegmentLog, typeIDs: [Int64?], history: Bool) -> [any BatchPart] {
        [EntityRowsPart(history: history, log: segmentLog), SettingRowsPart(), OperationRowsPart(retention: operationLog), RejectedRowsPart(),
         SegmentAppender(log: segmentLog, typeIDs: typeIDs)] + (history ? [HistoryFlushPart()] : [])
    }
}

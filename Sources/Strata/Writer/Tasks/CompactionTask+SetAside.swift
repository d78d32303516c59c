import Foundation
import GRDB

/// A segment row compaction cannot read: moved aside, with its reason, so that compaction
/// goes on around it. Writer thread.
extension CompactionTask {
    /// Moves the unreadable segment row `id` into `segments_set_aside`, with `damage` as
    /// its reason, in one transaction. Returns whether it did.
    func setAsideSegment(_ id: Int64, _ damage: SegmentDamage) -> Bool {
        let (store, metrics, logger) = (context.store, context.metrics, context.logger)
        do {
            let (bytes, records, lastID) = try store.withConnection { db in
                try db.inTransaction(.immediate) {
                    try db.execute(sql: """
                        INSERT INTO segments_set_aside (id, format, record_count, checksum, created_at, records, reason, set_aside_at)
                        SELECT id, format, record_count, checksum, created_at, records, ?, ? FROM segments WHERE id = ?
                        """, arguments: [damage.description, unixMilliseconds(), id])
                    try db.execute(sql: "DELETE FROM segments WHERE id = ?", arguments: [id])
                    return .commit
                }
                let row = try Row.fetchOne(db, sql: "SELECT length(records) AS bytes, record_count FROM segments_set_aside WHERE id = ?",
                                           arguments: [id])
                let bytes: Int = row?.value("bytes") ?? 0
                let records = Segment.plausibleRecordCount(row?.value("record_count") ?? 0, bytes: bytes)
                return (bytes, records, try Int64.fetchOne(db, sql: "SELECT max(id) FROM segments"))
            }
            segmentLog.noteRows(removed: 1, bytes: bytes, records: records)
            segmentLog.bases.removeAll()   // its values left the log: no record may be coded against them
            segmentLog.forgetRowTime(id: id)
            segmentLog.unreadableRows = max(0, segmentLog.unreadableRows - 1)
            segmentLog.lastID = lastID
            if let current = round {
                if let lastID, current.endID > lastID { round?.endID = lastID }
                if lastID == nil {
                    round = nil
                    if current.forced { forced.serve(upTo: current.ticket, failed: false) }
                }
            }
            logger.error("writer: segment \(id) cannot be read (\(damage)): set aside in segments_set_aside (the world never had its changes); compaction goes on")
            metrics.update {
                $0.segmentsSetAside += 1
                $0.recordBacklog(segmentLog)
            }
            return true
        } catch {
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            if context.reportIfCorrupt(storeError) { return true }
            logger.warning("writer: could not set segment \(id) aside: \(storeError)")
            return false
        }
    }
}

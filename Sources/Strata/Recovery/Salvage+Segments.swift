import Foundation
import GRDB
import GRDBSQLite

/// Segment rows whose records do not read whole. A row holds up to 64 KB of records, most of
/// them on overflow pages: one damaged overflow page made the whole row unreadable, and up
/// to 700 components with it. The salvage reads such a row's records through incremental
/// blob I/O (`sqlite3_blob_read`), a page's worth at a time, up to the first piece that
/// does not read, and keeps every whole record before it, in a row of its own under the
/// same id (so the log's order is kept). Opening thread, within the salvage.
extension Salvage {
    /// Bytes read at a time: a damaged page costs at most its own bytes and what follows it.
    static let blobPiece = 256

    /// For every segment row of `source` that the copy could not bring into `store`: its
    /// whole records before the damage, written again as a row under its id. Counts the
    /// records recovered, and those past the damage (lost), in `report`.
    static func recoverSegmentPrefixes(from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        guard let copied = try? store.queue.read({ db in Set(try Int64.fetchAll(db, sql: "SELECT id FROM segments")) }) else { return }
        // The ids the table's leaves still name (a damaged overflow page leaves its row's leaf whole).
        var ids: [Int64] = []
        try? source.read { db in
            let cursor = try Int64.fetchCursor(db, sql: "SELECT id FROM segments ORDER BY id")
            while let id = try cursor.next() { ids.append(id) }
        }
        for id in ids where !copied.contains(id) {
            guard let header = try? source.read({ db in
                try Row.fetchOne(db, sql: "SELECT format, record_count, created_at FROM segments WHERE id = ?", arguments: [id])
            }) ?? nil, let format = header.value("format", as: Int.self) else { continue }
            let prefix = (try? source.read { db in readablePrefix(db, table: "segments", column: "records", rowid: id) }) ?? []
            var arena: [UInt8] = []
            var pending: [SegmentEncoder.Pending] = []
            _ = try? prefix.withUnsafeBytes { bytes in
                try SegmentReader.forEachRecord(inPrefix: bytes, format: format) { record in
                    let start = arena.count
                    arena.append(contentsOf: record.payload)
                    pending.append(SegmentEncoder.Pending(key: record.key, version: record.version ?? 0,
                                                          payload: record.isRemoval ? nil : start ..< arena.count))
                }
            }
            let recorded = Segment.plausibleRecordCount(header.value("record_count", as: Int64.self) ?? 0, bytes: Segment.maxRecordsBytes + 1024)
            guard !pending.isEmpty else { continue }
            var encoder = SegmentEncoder()
            let chunks = arena.withUnsafeBytes { encoder.encode(&pending, arena: $0) }
            do {
                try store.queue.write { db in
                    // One chunk as a rule (fewer bytes than the row had); any more take the
                    // ids after it that are free.
                    var next = id
                    for chunk in chunks {
                        while try Int.fetchOne(db, sql: "SELECT count(*) FROM segments WHERE id = ?", arguments: [next]) != 0 { next += 1 }
                        try db.execute(sql: """
                            INSERT INTO segments (id, format, record_count, checksum, created_at, records) VALUES (?, ?, ?, ?, ?, ?)
                            """, arguments: [next, Segment.format, chunk.recordCount, Int64(chunk.checksum),
                                             header.value("created_at", as: Int64.self) ?? 0, Data(chunk.records)])
                        next += 1
                    }
                }
                report.rows["segment records read up to a damaged page", default: 0] += pending.count
                if recorded > pending.count {
                    report.skipped["segment records past a damaged page", default: 0] += recorded - pending.count
                }
            } catch {
                report.unreadable.append("segment \(id) (its readable records not written: \(error))")
            }
        }
    }

    /// The bytes of `column` in the row `rowid` of `table` that read, from the start up to
    /// the first piece that does not (empty if the blob cannot be opened).
    static func readablePrefix(_ db: Database, table: String, column: String, rowid: Int64) -> [UInt8] {
        var blob: OpaquePointer?
        guard sqlite3_blob_open(db.sqliteConnection, "main", table, column, rowid, 0, &blob) == SQLITE_OK, let blob else {
            if let blob { sqlite3_blob_close(blob) }
            return []
        }
        defer { sqlite3_blob_close(blob) }
        let size = Int(sqlite3_blob_bytes(blob))
        var bytes = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let count = min(blobPiece, size - offset)
            let status = bytes.withUnsafeMutableBytes { buffer in
                sqlite3_blob_read(blob, buffer.baseAddress.map { $0 + offset }, Int32(count), Int32(offset))
            }
            guard status == SQLITE_OK else {
                // The page the read could not reach is named by the one before it, whose own
                // bytes SQLite hands over as they are: a page overwritten whole (its pointer
                // to the next page among them) reads as data up to there. That page's worth
                // goes too, so that no byte of it is taken for a record.
                let pageSize = (try? Int.fetchOne(db, sql: "PRAGMA page_size")) ?? nil
                offset = max(0, offset - (pageSize ?? 65536))
                break
            }
            offset += count
        }
        return Array(bytes[0 ..< offset])
    }
}

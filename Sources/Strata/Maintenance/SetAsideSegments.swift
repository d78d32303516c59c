import Foundation
import GRDB

/// Segment rows compaction could not read and set aside (`segments_set_aside`,
/// CompactionTask+SetAside.swift): written out, read-only, for a newer build or a person.
package enum SetAsideSegments {
    /// One row as written out: `segment-ID.records` holds its bytes, `segment-ID.json` this.
    public struct Entry: Codable, Sendable, Equatable {
        public var id: Int64
        public var format: Int
        public var recordCount: Int
        public var checksum: Int64
        public var createdAt: Int64
        public var reason: String
        public var setAsideAt: Int64
        public var bytes: Int
    }

    /// Writes every set-aside row of the document at `path` into `folder` (made if
    /// missing). Returns what it wrote. The document is only read.
    @discardableResult
    public static func export(path: String, to folder: String) throws -> [Entry] {
        let rows = try StoreLocation(path: path).readExisting { db -> [(Entry, Data)] in
            guard try db.tableExists("segments_set_aside") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT * FROM segments_set_aside ORDER BY id").map { row in
                // Exported whatever it holds: the records as bytes, a field that does not read as 0 or "".
                let records: Data = row.value("records") ?? Data()
                return (Entry(id: try row.decode(forColumn: "id"), format: row.value("format") ?? 0,
                              recordCount: row.value("record_count") ?? 0, checksum: row.value("checksum") ?? 0,
                              createdAt: row.value("created_at") ?? 0, reason: row.value("reason") ?? "",
                              setAsideAt: row.value("set_aside_at") ?? 0, bytes: records.count), records)
            }
        }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        for (entry, records) in rows {
            let base = URL(fileURLWithPath: folder).appendingPathComponent("segment-\(entry.id)")
            try records.write(to: base.appendingPathExtension("records"), options: .atomic)
            try encoder.encode(entry).write(to: base.appendingPathExtension("json"), options: .atomic)
        }
        return rows.map(\.0)
    }
}

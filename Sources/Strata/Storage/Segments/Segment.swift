import GRDB
import GRDBSQLite

/// The segment log: where component writes go (docs/storage.md has the whole layout).
///
/// Every batch's component writes, critical and derived, are appended to the `segments`
/// table as one row or a few (chunks of at most ``maxRecordsBytes``), at the end of its
/// B-tree: a flush of 1,000 changed transforms costs about its records' bytes plus a
/// page, whatever the size of the world. Compaction later folds the log into the base
/// rows (`components`) or rewrites its live records into one segment.
///
/// A row's id orders the log: `seq << 20 | part`, where `seq` is the batch's place in
/// commit order and `part` the chunk within it. A merge writes its output under the
/// `seq` of the last segment it consumed, so the log keeps its order.
///
/// Records (format 3), packed in the row's `records` BLOB as groups of one component type,
/// kind, payload version and coding, entities in ascending order; integers are LEB128
/// varints, as in ``PayloadWriter``:
///
///     records := group*
///     group   := header version count [length] [first] entry{count}
///     header  := type_id << 4 | coded << 3 | dense << 2 | fixed << 1 | removed
///                 (component_types.id; removed = 1: tombstones; fixed = 1: every payload
///                  of the group is `length` bytes; dense = 1: the entity numbers are
///                  first, first + 1, …, first + count − 1; coded = 1: every payload is
///                  coded against its key's previous one, see below)
///     entry   := [delta] [length] payload (puts; the delta only when not dense, the
///                                          length only when not fixed)
///              | [delta] [length] check coded
///                                         (puts of a coded group: the low 16 bits of the
///                                          CRC-32C of its base, little-endian, then the
///                                          payload coded against it: ``XorCoding``)
///              | delta                    (tombstones)
///     delta   := entity number − the previous entry's in the group (the first: the number)
///
/// Every entry takes a byte at least (tombstones and empty payloads are never dense), so
/// a count larger than the row's bytes is damage. A transform (16 bytes of payload) of
/// one of 100,000 entities costs 17 bytes written whole: one for the delta between moving
/// entities, its length being the group's; when every entity moves (N = M) the numbers are
/// consecutive and it costs its 16 bytes. Each key appears at most once in a row (a
/// batch's writes are coalesced, a merge keeps the newest).
///
/// A coded put's *base* is its key's payload just before it: its newest record in an
/// earlier row, or its base row when the log has none. The writer codes a put against the
/// payload it committed last for that key (``SegmentBaseCache``), when both are the same
/// length, at most ``XorCoding/maxBaseBytes``, and coding saves bytes: a transform whose x
/// moved takes 5 to 8 bytes instead of 16. Every reader that reads the log in order has the
/// bases (``SegmentBases``). A coded record whose base is missing or fails its check is
/// *unresolved*: never decoded against the wrong base, skipped and counted, while the rest
/// of its row reads. That is the fate of a gone entity's later records once compaction
/// dropped its earlier ones (nobody reads them), and of a key's records after a row that
/// was lost (the reload reports them; compaction drops them with their rows, and counts them). Compaction, merge
/// and salvage write whole records: coding never spans what they rewrite.
///
/// Format 2 (schema 8 to 19) has no `coded` flag (header := type_id << 3 | dense << 2 |
/// fixed << 1 | removed); format 1 (before schema 8) neither `dense` nor `fixed` (header :=
/// type_id << 1 | removed; a delta and a length in every put). Both are still read.
///
/// A despawn writes no record: the entity's row goes, and with it every record that
/// names its number (numbers are never reused while a record may name them).
///
/// The row also carries `format` (2), `record_count` and `checksum` (CRC-32C of the
/// BLOB). A reader that finds a format it does not know, a wrong checksum or a record
/// that does not parse treats the whole row as *unreadable*: the reload skips it and
/// reports it, compaction never consumes it nor anything after it, and it stays in the
/// file untouched.
enum Segment {
    /// The record format this build writes.
    static let format = 3
    /// The record formats this build reads.
    static let readableFormats = 1 ... 3
    /// Chunks of a batch (and of a merge's output) hold at most this many bytes of records.
    static let maxRecordsBytes = 64 * 1024
    static let partBits: Int64 = 20

    static func id(seq: Int64, part: Int) -> Int64 { seq << partBits | Int64(part) }
    static func seq(ofID id: Int64) -> Int64 { id >> partBits }

    /// A row's `record_count` as counts may use it: between 0 and the bytes of its records
    /// (every record takes a byte at least), else 0. The value is read from the file, and
    /// adding a damaged one up (Int64's top) overflowed; the reader finds such a row
    /// malformed anyway, by the records it parses.
    static func plausibleRecordCount(_ stored: Int64, bytes: Int) -> Int {
        (0 ... Int64(bytes)).contains(stored) ? Int(stored) : 0
    }
}

extension Segment {
    /// Inserts `chunks` as the rows `seq << 20 | 0, 1, …` (the appender's batch, or a
    /// merge's output). Returns the id of the last row. Writer thread, inside a transaction.
    @discardableResult
    static func insert(_ chunks: [SegmentEncoder.Chunk], seq: Int64, createdAt: Int64, _ db: Database) throws -> Int64? {
        let insert = try db.cachedStatement(sql: """
            INSERT INTO segments (id, format, record_count, checksum, created_at, records) VALUES (?, ?, ?, ?, ?, ?)
            """).sqliteStatement
        var lastID: Int64?
        for (part, chunk) in chunks.enumerated() {
            let id = Segment.id(seq: seq, part: part)
            try chunk.records.withUnsafeBytes { records in
                sqlite3_bind_int64(insert, 1, id)
                sqlite3_bind_int64(insert, 2, Int64(Segment.format))
                sqlite3_bind_int64(insert, 3, Int64(chunk.recordCount))
                sqlite3_bind_int64(insert, 4, Int64(chunk.checksum))
                sqlite3_bind_int64(insert, 5, createdAt)
                try bindBlob(insert, 6, records)
                try stepDone(insert, db)
            }
            lastID = id
        }
        return lastID
    }
}

/// A component key in the log: an entity number and a `component_types.id`.
struct SegmentKey: Hashable, Comparable, Sendable {
    var entity: EntityNumber
    var typeID: Int64

    static func < (a: SegmentKey, b: SegmentKey) -> Bool {
        a.entity != b.entity ? a.entity < b.entity : a.typeID < b.typeID
    }
}

/// One record as read: a put (with its payload) or a tombstone.
struct SegmentRecord {
    var key: SegmentKey
    /// Nil for a tombstone.
    var version: Int?
    /// The payload of a put; valid only inside the reader's closure.
    var payload: UnsafeRawBufferPointer

    var isRemoval: Bool { version == nil }
    /// About what the record takes in a row (delta, length, payload), for the log's accounting.
    var approximateBytes: Int32 { Int32(truncatingIfNeeded: payload.count + (isRemoval ? 2 : 3)) }
}

/// Why a segment row cannot be read.
enum SegmentDamage: Error, Equatable, CustomStringConvertible {
    case unknownFormat(Int)
    case checksumMismatch
    case malformed(String)

    var description: String {
        switch self {
        case .unknownFormat(let format): "written in record format \(format), which this build does not know"
        case .checksumMismatch: "its records do not match their checksum"
        case .malformed(let why): "its records do not parse: \(why)"
        }
    }
}

/// Reads the records of one segment row (format 1, see ``Segment``).
///
/// Checks before it reads: a row in another format, with a wrong checksum or with a
/// record that does not parse is ``SegmentDamage``, reported to the caller, which keeps
/// the row and skips it; the reader never traps on what a file contains.
enum SegmentReader {
    /// Calls `body` with every record of `records`, in order, after checking the row.
    /// Nothing is passed to `body` unless the whole row is sound.
    static func forEachRecord(format: Int, recordCount: Int, checksum: UInt32, records: UnsafeRawBufferPointer,
                              _ body: (SegmentRecord) throws -> Void) throws {
        guard format == Segment.format else { throw SegmentDamage.unknownFormat(format) }
        guard CRC32C.checksum(records) == checksum else { throw SegmentDamage.checksumMismatch }
        // Parse everything first: a row is applied whole or not at all.
        var parsed = 0
        try parse(records) { _ in parsed += 1 }
        guard parsed == recordCount else {
            throw SegmentDamage.malformed("\(parsed) records where the row says \(recordCount)")
        }
        try parse(records, body)
    }

    private static func parse(_ records: UnsafeRawBufferPointer, _ body: (SegmentRecord) throws -> Void) throws {
        var reader = PayloadReader(records)
        while !reader.isAtEnd {
            let start = reader.offset
            do {
                let header: UInt64 = try reader.read()
                let entity: UInt64 = try reader.read()
                guard header >> 1 <= UInt64(Int64.max), entity <= UInt64(Int64.max) else {
                    throw SegmentDamage.malformed("a number out of range at offset \(start)")
                }
                let key = SegmentKey(entity: Int64(entity), typeID: Int64(header >> 1))
                if header & 1 == 1 {
                    try body(SegmentRecord(key: key, version: nil, payload: UnsafeRawBufferPointer(start: nil, count: 0),
                                           bytes: UnsafeRawBufferPointer(rebasing: records[start ..< reader.offset])))
                    continue
                }
                let version: UInt64 = try reader.read()
                guard version <= UInt64(Int32.max) else { throw SegmentDamage.malformed("version \(version) at offset \(start)") }
                let payload = try reader.readBytes()
                try body(SegmentRecord(key: key, version: Int(version), payload: payload,
                                       bytes: UnsafeRawBufferPointer(rebasing: records[start ..< reader.offset])))
            } catch let error as PayloadError {
                throw SegmentDamage.malformed("\(error) (record at offset \(start))")
            }
        }
    }
}

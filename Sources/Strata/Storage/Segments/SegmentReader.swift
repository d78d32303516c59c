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
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        while !reader.isAtEnd {
            let start = reader.offset
            do {
                let header: UInt64 = try reader.read()
                let version: UInt64 = try reader.read()
                let count: UInt64 = try reader.read()
                guard header >> 1 <= UInt64(Int64.max), version <= UInt64(Int32.max), count <= UInt64(records.count) else {
                    throw SegmentDamage.malformed("a group header out of range at offset \(start)")
                }
                let typeID = Int64(header >> 1)
                let removed = header & 1 == 1
                var entity: UInt64 = 0
                for _ in 0 ..< count {
                    let delta: UInt64 = try reader.read()
                    let (sum, overflow) = entity.addingReportingOverflow(delta)
                    guard !overflow, sum <= UInt64(Int64.max) else {
                        throw SegmentDamage.malformed("an entity number out of range in the group at offset \(start)")
                    }
                    entity = sum
                    let key = SegmentKey(entity: Int64(entity), typeID: typeID)
                    if removed {
                        try body(SegmentRecord(key: key, version: nil, payload: none))
                    } else {
                        try body(SegmentRecord(key: key, version: Int(version), payload: try reader.readBytes()))
                    }
                }
            } catch let error as PayloadError {
                throw SegmentDamage.malformed("\(error) (group at offset \(start))")
            }
        }
    }
}

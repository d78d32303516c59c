/// Reads the records of one segment row (formats 1 to 3, see ``Segment``).
///
/// Checks before it reads: a row in another format, with a wrong checksum or with a
/// record that does not parse is ``SegmentDamage``, reported to the caller, which keeps
/// the row and skips it; the reader never traps on what a file contains.
///
/// A record coded against its key's previous payload (format 3's coded groups) is passed on
/// decoded; its base comes from `base` (the key's payload before the row). A coded record
/// whose base is missing or is not the one it was written against (its check differs: a
/// row before it lost, an entity whose older records compaction dropped because it is
/// gone) is *unresolved*: never decoded against the wrong base, never passed to `body`,
/// but to `unresolved`, and the rest of the row reads as usual.
enum SegmentReader {
    /// Copies a key's payload before the record being read into the buffer; false when there
    /// is none. Throws when it cannot tell (a base row that does not read): that is the
    /// caller's error, never an unresolved record.
    typealias BaseLookup = (SegmentKey, inout [UInt8]) throws -> Bool

    /// Calls `body` with every record of `records`, in order, after checking the row, and
    /// `unresolved` with the key of every coded record whose base it does not have.
    /// Nothing is passed on unless the whole row is sound.
    static func forEachRecord(format: Int, recordCount: Int, checksum: UInt32, records: UnsafeRawBufferPointer,
                              base: BaseLookup? = nil, unresolved: ((SegmentKey) throws -> Void)? = nil,
                              _ body: (SegmentRecord) throws -> Void) throws {
        guard Segment.readableFormats.contains(format) else { throw SegmentDamage.unknownFormat(format) }
        guard CRC32C.checksum(records) == checksum else { throw SegmentDamage.checksumMismatch }
        // Parse everything first: a row is applied whole or not at all.
        var parsed = 0
        try parse(records, format: format, base: nil, unresolved: { _ in parsed += 1 }) { _ in parsed += 1 }
        guard parsed == recordCount else {
            throw SegmentDamage.malformed("\(parsed) records where the row says \(recordCount)")
        }
        try parse(records, format: format, base: base, unresolved: unresolved ?? { _ in }, body)
    }

    /// Calls `body` with every whole record of `prefix`, the part of a row's records that
    /// read before a damaged page (the salvage's: ``Salvage/recoverSegmentPrefixes(from:into:_:)``),
    /// and stops at the first that is cut or does not parse; returns how many it passed on.
    /// Coded records are not passed on (the salvage has no base for them).
    /// No checksum can be checked (it covers the whole row): the bytes are the ones SQLite
    /// read from pages that passed its own checks.
    @discardableResult
    static func forEachRecord(inPrefix prefix: UnsafeRawBufferPointer, format: Int,
                              _ body: (SegmentRecord) throws -> Void) throws -> Int {
        guard Segment.readableFormats.contains(format) else { return 0 }
        var passed = 0
        do {
            try parse(prefix, format: format, base: nil, unresolved: { _ in }) { record in
                try body(record)
                passed += 1
            }
        } catch is SegmentDamage {
            // The cut: what came before it was passed on.
        }
        return passed
    }

    private static func parse(_ records: UnsafeRawBufferPointer, format: Int, base: BaseLookup?,
                              unresolved: (SegmentKey) throws -> Void, _ body: (SegmentRecord) throws -> Void) throws {
        // Format 1 has no flag (type_id << 1 | removed), format 2 no `coded` flag.
        let typeShift: UInt64 = format == 1 ? 1 : format == 2 ? 3 : 4
        var reader = PayloadReader(records)
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        var previous: [UInt8] = []
        var decoded: [UInt8] = []
        while !reader.isAtEnd {
            let start = reader.offset
            do {
                let header: UInt64 = try reader.read()
                let version: UInt64 = try reader.read()
                let count: UInt64 = try reader.read()
                let removed = header & 1 == 1
                let fixed = typeShift >= 3 && header & 2 == 2
                let dense = typeShift >= 3 && header & 4 == 4
                let coded = typeShift == 4 && header & 8 == 8
                let length: UInt64? = fixed ? try reader.read() : nil
                let first: UInt64 = dense ? try reader.read() : 0
                // Every entry takes a byte at least (the writer keeps deltas where it would
                // not), so no count can exceed the bytes.
                guard version <= UInt64(Int32.max), count <= UInt64(records.count), !(fixed && removed),
                      !(dense && (removed || length == 0)), !(coded && removed),
                      !coded || (length ?? 0) <= UInt64(XorCoding.maxBaseBytes),
                      // A coded group's length is its payloads' (bounded above), not its bytes':
                      // a 16-byte move coded in 5 fits a row of 15.
                      length.map({ coded || $0 <= UInt64(records.count) }) ?? true,
                      !dense || count == 0 || first <= UInt64(Int64.max) - (count - 1) else {
                    throw SegmentDamage.malformed("a group header out of range at offset \(start)")
                }
                let typeID = Int64(header >> typeShift)
                var entity: UInt64 = 0
                for i in 0 ..< count {
                    if dense {
                        entity = first + i
                    } else {
                        let delta: UInt64 = try reader.read()
                        let (sum, overflow) = entity.addingReportingOverflow(delta)
                        guard !overflow, sum <= UInt64(Int64.max) else {
                            throw SegmentDamage.malformed("an entity number out of range in the group at offset \(start)")
                        }
                        entity = sum
                    }
                    let key = SegmentKey(entity: Int64(entity), typeID: typeID)
                    if removed {
                        try body(SegmentRecord(key: key, version: nil, payload: none))
                    } else if coded {
                        // The payload's length, not the coded bytes': it may exceed what is left.
                        let size: Int
                        if let length {
                            size = Int(length)
                        } else {
                            let stored: UInt64 = try reader.read()
                            guard stored <= UInt64(XorCoding.maxBaseBytes) else {
                                throw SegmentDamage.malformed("a coded payload of \(stored) bytes in the group at offset \(start)")
                            }
                            size = Int(stored)
                        }
                        let stored = try reader.readBytes(count: 2)
                        let check = UInt16(stored[0]) | UInt16(stored[1]) << 8
                        let resolved = try base.map { try $0(key, &previous) } ?? false
                        guard resolved, previous.count == size, XorCoding.check(previous) == check else {
                            try XorCoding.skip(&reader, count: size)
                            try unresolved(key)
                            continue
                        }
                        try previous.withUnsafeBytes { try XorCoding.decode(&reader, base: $0, into: &decoded) }
                        try decoded.withUnsafeBytes { try body(SegmentRecord(key: key, version: Int(version), payload: $0)) }
                    } else {
                        let payload = try length.map { try reader.readBytes(count: Int($0)) } ?? reader.readBytes()
                        try body(SegmentRecord(key: key, version: Int(version), payload: payload))
                    }
                }
            } catch let error as PayloadError {
                throw SegmentDamage.malformed("\(error) (group at offset \(start))")
            }
        }
    }
}

/// Packs records into segment chunks (format 3, see ``Segment``): sorted into groups of
/// one (type, kind, version, coding), entity numbers delta-encoded (or not written at all
/// when they are consecutive), the payload length written once per group when every
/// payload in it has the same length, a chunk closed every ``Segment/maxRecordsBytes``.
/// A record given its key's previous payload (its *base*) is coded against it
/// (``XorCoding``) when that takes fewer bytes than the payload itself.
///
/// Owned by the writer thread (the appender's, and each compaction step's); reused,
/// so encoding allocates only while its buffers grow. Payloads are copied or XOR-coded
/// byte for byte: the encoder never decodes one.
struct SegmentEncoder {
    /// A record to encode: its payload lives in the caller's arena.
    struct Pending {
        var key: SegmentKey
        var version: Int
        /// The payload's bytes in the arena; nil for a tombstone.
        var payload: Range<Int>?
        /// The key's previous payload in the arena, if the caller has it: the record may
        /// be coded against it. Nil for a record written whole.
        var base: Range<Int>? = nil
    }

    /// A finished chunk, ready to insert.
    struct Chunk {
        var records: [UInt8]
        var recordCount: Int
        var checksum: UInt32
    }

    private var chunk = PayloadWriter(capacity: Segment.maxRecordsBytes + 1024)
    private var chunkCount = 0
    private var group = PayloadWriter(capacity: 4096)
    private var groupCount = 0
    private var chunks: [Chunk] = []

    /// Encodes `records` (each key once; any order, sorted here) whose payloads are in
    /// `arena`, and returns the chunks.
    mutating func encode(_ records: inout [Pending], arena: UnsafeRawBufferPointer) -> [Chunk] {
        for index in records.indices {
            guard let base = records[index].base else { continue }
            records[index].base = Self.worthCoding(records[index].payload, base: base, arena) ? base : nil
        }
        records.sort { a, b in
            if a.key.typeID != b.key.typeID { return a.key.typeID < b.key.typeID }
            if (a.payload == nil) != (b.payload == nil) { return a.payload != nil }
            if a.version != b.version { return a.version < b.version }
            if (a.base == nil) != (b.base == nil) { return a.base == nil }
            return a.key.entity < b.key.entity
        }
        var header: Group?
        var previous: EntityNumber = 0
        for (index, record) in records.enumerated() {
            let removed = record.payload == nil
            let coded = record.base != nil
            let sameRun = header.map {
                $0.typeID == record.key.typeID && $0.removed == removed && $0.version == record.version && $0.coded == coded
            } ?? false
            if !sameRun || chunk.bytes.count + group.bytes.count >= Segment.maxRecordsBytes {
                closeGroup(header)
                if chunk.bytes.count >= Segment.maxRecordsBytes { closeChunk() }
                // A group cut off by a full chunk keeps its run's shape: a part of a run of
                // equal lengths has equal lengths, a part of consecutive numbers is consecutive.
                let shape = if sameRun, let header { (fixedLength: header.fixedLength, dense: header.dense) }
                            else { Self.shape(ofRunIn: records, from: index) }
                header = Group(typeID: record.key.typeID, removed: removed, version: record.version, coded: coded,
                               fixedLength: shape.fixedLength, dense: shape.dense, first: record.key.entity)
                previous = 0
            }
            guard let current = header else { continue }   // set above, or the run goes on
            if !current.dense { group.write(UInt64(record.key.entity - previous)) }
            previous = record.key.entity
            if let payload = record.payload {
                if current.fixedLength == nil { group.write(UInt64(payload.count)) }
                if let base = record.base {
                    let baseBytes = UnsafeRawBufferPointer(rebasing: arena[base])
                    let check = XorCoding.check(baseBytes)
                    group.write(UInt8(truncatingIfNeeded: check))
                    group.write(UInt8(truncatingIfNeeded: check >> 8))
                    XorCoding.encode(UnsafeRawBufferPointer(rebasing: arena[payload]), base: baseBytes, into: &group)
                } else {
                    group.append(UnsafeRawBufferPointer(rebasing: arena[payload]))
                }
            }
            groupCount += 1
        }
        closeGroup(header)
        closeChunk()
        defer { chunks.removeAll(keepingCapacity: true) }
        return chunks
    }

    /// A group's header: its run of (type, kind, version), the length every payload in it
    /// has if they all have one, and whether its entity numbers are consecutive from `first`.
    private struct Group {
        var typeID: Int64
        var removed: Bool
        var version: Int
        /// Its records are coded against their bases (``XorCoding``).
        var coded: Bool
        var fixedLength: Int?
        var dense: Bool
        var first: EntityNumber
    }

    /// The run of (type, kind, version) that starts at `start`: the payload length all its
    /// puts share (nil when they differ, or for tombstones), and whether its entity numbers
    /// are consecutive (a world whose entities all changed: no deltas to write).
    private static func shape(ofRunIn records: [Pending], from start: Int) -> (fixedLength: Int?, dense: Bool) {
        let first = records[start]
        var length = first.payload?.count
        var dense = true
        var previous = first.key.entity
        for record in records[(start + 1)...] {
            guard record.key.typeID == first.key.typeID, record.version == first.version,
                  (record.payload == nil) == (first.payload == nil), (record.base == nil) == (first.base == nil) else { break }
            if record.payload?.count != length { length = nil }
            if record.key.entity != previous + 1 { dense = false }
            if length == nil && !dense { break }
            previous = record.key.entity
        }
        // Every entry takes a byte at least, so a group's count stays bounded by its bytes:
        // tombstones and empty payloads keep their deltas.
        if first.payload == nil || length == 0 { dense = false }
        return (length, dense)
    }

    private mutating func closeGroup(_ header: Group?) {
        guard let header, groupCount > 0 else { return }
        chunk.write(UInt64(header.typeID) << 4 | (header.coded ? 8 : 0) | (header.dense ? 4 : 0)
                    | (header.fixedLength != nil ? 2 : 0) | (header.removed ? 1 : 0))
        chunk.write(UInt64(header.version))
        chunk.write(UInt64(groupCount))
        if let length = header.fixedLength { chunk.write(UInt64(length)) }
        if header.dense { chunk.write(UInt64(header.first)) }
        group.bytes.withUnsafeBytes { chunk.append($0) }
        chunkCount += groupCount
        group.reset()
        groupCount = 0
    }

    private mutating func closeChunk() {
        guard chunkCount > 0 else { return }
        chunks.append(Chunk(records: chunk.bytes, recordCount: chunkCount, checksum: CRC32C.checksum(chunk.bytes)))
        chunk.reset()
        chunkCount = 0
    }

    /// Whether a put is worth coding against `base`: the same length, and fewer bytes coded.
    private static func worthCoding(_ payload: Range<Int>?, base: Range<Int>, _ arena: UnsafeRawBufferPointer) -> Bool {
        guard let payload, payload.count == base.count, payload.count > 0 else { return false }
        let coded = XorCoding.codedSize(UnsafeRawBufferPointer(rebasing: arena[payload]), base: UnsafeRawBufferPointer(rebasing: arena[base]))
        return coded + 2 < payload.count   // its base's check included
    }
}

/// Packs records into segment chunks (format 1, see ``Segment``): sorted into groups of
/// one (type, kind, version), entity numbers delta-encoded, a chunk closed every
/// ``Segment/maxRecordsBytes``.
///
/// Owned by the writer thread (the appender's, and each compaction step's); reused,
/// so encoding allocates only while its buffers grow. Payloads are copied byte for byte:
/// the encoder never decodes one.
struct SegmentEncoder {
    /// A record to encode: its payload lives in the caller's arena.
    struct Pending {
        var key: SegmentKey
        var version: Int
        /// The payload's bytes in the arena; nil for a tombstone.
        var payload: Range<Int>?
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
        records.sort { a, b in
            if a.key.typeID != b.key.typeID { return a.key.typeID < b.key.typeID }
            if (a.payload == nil) != (b.payload == nil) { return a.payload != nil }
            if a.version != b.version { return a.version < b.version }
            return a.key.entity < b.key.entity
        }
        var header: (typeID: Int64, removed: Bool, version: Int)?
        var previous: EntityNumber = 0
        for record in records {
            let removed = record.payload == nil
            if header.map({ $0.typeID != record.key.typeID || $0.removed != removed || $0.version != record.version }) ?? true
                || chunk.bytes.count + group.bytes.count >= Segment.maxRecordsBytes {
                closeGroup(header)
                if chunk.bytes.count >= Segment.maxRecordsBytes { closeChunk() }
                header = (record.key.typeID, removed, record.version)
                previous = 0
            }
            group.write(UInt64(record.key.entity - previous))
            previous = record.key.entity
            if let payload = record.payload {
                group.write(UInt64(payload.count))
                group.append(UnsafeRawBufferPointer(rebasing: arena[payload]))
            }
            groupCount += 1
        }
        closeGroup(header)
        closeChunk()
        defer { chunks.removeAll(keepingCapacity: true) }
        return chunks
    }

    private mutating func closeGroup(_ header: (typeID: Int64, removed: Bool, version: Int)?) {
        guard let header, groupCount > 0 else { return }
        chunk.write(UInt64(header.typeID) << 1 | (header.removed ? 1 : 0))
        chunk.write(UInt64(header.version))
        chunk.write(UInt64(groupCount))
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
}

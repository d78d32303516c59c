/// Packs records into segment chunks (format 1, see ``Segment``).
///
/// Owned by the writer thread; reused from batch to batch, so encoding allocates only
/// while its buffer grows.
struct SegmentEncoder {
    /// A finished chunk, ready to insert.
    struct Chunk {
        var records: [UInt8]
        var recordCount: Int
        var checksum: UInt32
    }

    private var buffer = PayloadWriter(capacity: Segment.maxRecordsBytes + 1024)
    private var count = 0
    private(set) var chunks: [Chunk] = []

    var isEmpty: Bool { chunks.isEmpty && count == 0 }

    /// Appends a put of an encoded payload; returns the record's size.
    @discardableResult
    mutating func appendPut(_ key: SegmentKey, version: Int, payload: [UInt8]) -> Int {
        let start = buffer.bytes.count
        buffer.write(UInt64(key.typeID) << 1)
        buffer.write(UInt64(key.entity))
        buffer.write(UInt64(version))
        buffer.write(payload)
        return recordAppended(from: start)
    }

    /// Appends a tombstone; returns the record's size.
    @discardableResult
    mutating func appendRemoval(_ key: SegmentKey) -> Int {
        let start = buffer.bytes.count
        buffer.write(UInt64(key.typeID) << 1 | 1)
        buffer.write(UInt64(key.entity))
        return recordAppended(from: start)
    }

    /// Appends a record read from another segment, byte for byte.
    mutating func appendRaw(_ record: UnsafeRawBufferPointer) {
        buffer.append(record)
        count += 1
        if buffer.bytes.count >= Segment.maxRecordsBytes { closeChunk() }
    }

    private mutating func recordAppended(from start: Int) -> Int {
        let size = buffer.bytes.count - start
        count += 1
        if buffer.bytes.count >= Segment.maxRecordsBytes { closeChunk() }
        return size
    }

    private mutating func closeChunk() {
        guard count > 0 else { return }
        chunks.append(Chunk(records: buffer.bytes, recordCount: count, checksum: CRC32C.checksum(buffer.bytes)))
        buffer.reset()
        count = 0
    }

    /// Closes the open chunk and returns every chunk, emptying the encoder.
    mutating func finish() -> [Chunk] {
        closeChunk()
        defer { chunks.removeAll(keepingCapacity: true) }
        return chunks
    }
}

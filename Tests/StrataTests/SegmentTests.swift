import Foundation
import Testing
@testable import Strata

@Suite struct SegmentTests {
    /// A record to encode: a put of `payload`, or a tombstone when nil.
    struct R {
        var entity: Int64
        var type: Int64
        var version = 1
        var payload: [UInt8]?
    }

    func encode(_ records: [R]) -> [SegmentEncoder.Chunk] {
        var arena: [UInt8] = []
        var pending = records.map { r -> SegmentEncoder.Pending in
            var range: Range<Int>?
            if let payload = r.payload {
                range = arena.count ..< arena.count + payload.count
                arena += payload
            }
            return .init(key: SegmentKey(entity: r.entity, typeID: r.type), version: r.version, payload: range)
        }
        var encoder = SegmentEncoder()
        return arena.withUnsafeBytes { encoder.encode(&pending, arena: $0) }
    }

    func read(_ chunk: SegmentEncoder.Chunk, format: Int = Segment.format) throws -> [R] {
        var result: [R] = []
        try chunk.records.withUnsafeBytes { bytes in
            try SegmentReader.forEachRecord(format: format, recordCount: chunk.recordCount, checksum: chunk.checksum, records: bytes) {
                result.append(R(entity: $0.key.entity, type: $0.key.typeID, version: $0.version ?? 0,
                                payload: $0.isRemoval ? nil : Array($0.payload)))
            }
        }
        return result
    }

    @Test func putsAndTombstonesReadBackGroupedByTypeKindAndVersion() throws {
        let chunks = encode([
            R(entity: 300_000, type: 70, payload: nil),
            R(entity: 9, type: 3, version: 2, payload: [9]),
            R(entity: 1, type: 3, payload: [1, 2, 3]),
            R(entity: 5, type: 3, payload: []),
        ])
        #expect(chunks.count == 1)
        let read = try read(chunks[0])
        #expect(read.map(\.entity) == [1, 5, 9, 300_000])
        #expect(read.map(\.type) == [3, 3, 3, 70])
        #expect(read.map(\.version) == [1, 1, 2, 0])
        #expect(read.map(\.payload) == [[1, 2, 3], [], [9], nil])
    }

    @Test func aTransformOfOneOf100kEntitiesCosts17Bytes() throws {
        // 1,000 movers spread over 100,000 entities: deltas of 100 fit one byte, and the
        // 16-byte length is the group's, written once.
        let chunks = encode((0 ..< 1000).map { R(entity: Int64($0 * 100 + 1), type: 1, payload: [UInt8](repeating: 7, count: 16)) })
        let bytes = chunks.reduce(0) { $0 + $1.records.count }
        #expect(bytes <= 1000 * 17 + 8, "\(bytes) bytes for 1,000 records")
        #expect(try read(chunks[0]).count == 1000)
    }

    @Test func aGroupOfMixedLengthsKeepsALengthPerRecordAndAFixedOneDoesNot() throws {
        let fixed = encode((1 ... 100).map { R(entity: Int64($0), type: 1, payload: [UInt8](repeating: 3, count: 8)) })[0]
        let mixed = encode((1 ... 100).map { R(entity: Int64($0), type: 1, payload: [UInt8](repeating: 3, count: $0 == 50 ? 9 : 8)) })[0]
        #expect(mixed.records.count - fixed.records.count == 100 + 1 - 1, "a length per put, none in the header")
        let read = try read(mixed)
        #expect(read.map { $0.payload?.count } == (1 ... 100).map { $0 == 50 ? 9 : 8 })
        // Runs of different types, versions and kinds in one batch: each decides for itself.
        let runs = encode([
            R(entity: 1, type: 1, payload: [1, 2]), R(entity: 2, type: 1, payload: [3, 4]),
            R(entity: 1, type: 2, payload: [5]), R(entity: 2, type: 2, payload: [6, 7, 8]),
            R(entity: 3, type: 1, version: 2, payload: []), R(entity: 4, type: 1, version: 2, payload: []),
            R(entity: 5, type: 1, payload: nil),
        ])
        #expect(try runs.flatMap { try self.read($0) }.map(\.payload) == [[1, 2], [3, 4], [], [], nil, [5], [6, 7, 8]])
    }

    @Test func consecutiveEntitiesCostTheirPayloadAlone() throws {
        // N = M: every entity moved, so the numbers are consecutive and no delta is written.
        let chunks = encode((1 ... 1000).map { R(entity: Int64($0), type: 1, payload: [UInt8](repeating: UInt8($0 % 7), count: 16)) })
        let bytes = chunks.reduce(0) { $0 + $1.records.count }
        #expect(bytes <= 1000 * 16 + 12, "\(bytes) bytes for 1,000 records")
        let read = try read(chunks[0])
        #expect(read.map(\.entity) == (1 ... 1000).map(Int64.init))
        #expect(read.map(\.payload) == (1 ... 1000).map { [UInt8](repeating: UInt8($0 % 7), count: 16) })
        // One gap: the deltas come back.
        let gap = encode((1 ... 1000).map { R(entity: Int64($0 == 1000 ? 1001 : $0), type: 1, payload: [UInt8](repeating: 1, count: 16)) })
        #expect(gap.reduce(0) { $0 + $1.records.count } >= 1000 * 17)
        #expect(try self.read(gap[0]).map(\.entity).last == 1001)
    }

    @Test func consecutiveTombstonesAndEmptyPayloadsKeepTheirDeltas() throws {
        // A byte per entry at least: otherwise a count could claim more records than bytes.
        let tombstones = encode((1 ... 100).map { R(entity: Int64($0), type: 1, payload: nil) })[0]
        let empty = encode((1 ... 100).map { R(entity: Int64($0), type: 2, payload: []) })[0]
        #expect(tombstones.records.count >= 100)
        #expect(empty.records.count >= 100)
        #expect(try read(tombstones).map(\.entity) == (1 ... 100).map(Int64.init))
        #expect(try read(empty).map(\.payload) == Array(repeating: [], count: 100))
    }

    @Test func aDenseGroupWithACountPastItsBytesIsDamage() throws {
        var writer = PayloadWriter()
        writer.write(UInt64(1) << 4 | 4 | 1)   // type 1, dense tombstones: never written
        writer.write(UInt64(0))
        writer.write(UInt64(3))
        writer.write(UInt64(10))
        #expect(throws: SegmentDamage.self) {
            try writer.bytes.withUnsafeBytes { bytes in
                try SegmentReader.forEachRecord(format: Segment.format, recordCount: 3, checksum: CRC32C.checksum(writer.bytes), records: bytes) { _ in }
            }
        }
    }

    @Test func aFixedRunCutByAFullChunkStaysFixedInTheNextChunk() throws {
        let chunks = encode((0 ..< 10_000).map { R(entity: Int64($0), type: 1, payload: [UInt8](repeating: UInt8($0 % 251), count: 16)) })
        #expect(chunks.count > 1)
        for chunk in chunks { #expect(chunk.records.count <= chunk.recordCount * 16 + 16, "no length nor delta per record in any chunk") }
        let all = try chunks.flatMap { try read($0) }
        #expect(all.map(\.payload) == (0 ..< 10_000).map { [UInt8](repeating: UInt8($0 % 251), count: 16) })
        #expect(all.map(\.entity) == (0 ..< 10_000).map(Int64.init))
    }

    @Test func rowsInFormat1AreStillRead() throws {
        // Format 1, as builds before schema 8 wrote it: header = type << 1 | removed and a
        // length in every put.
        var writer = PayloadWriter()
        writer.write(UInt64(7) << 1)        // type 7, puts
        writer.write(UInt64(1))             // version
        writer.write(UInt64(2))             // two entries
        writer.write(UInt64(4)); writer.write(UInt64(2)); [UInt8]([0xAA, 0xBB]).withUnsafeBytes { writer.append($0) }
        writer.write(UInt64(3)); writer.write(UInt64(1)); [UInt8]([0xCC]).withUnsafeBytes { writer.append($0) }
        writer.write(UInt64(7) << 1 | 1)    // type 7, tombstones
        writer.write(UInt64(0))
        writer.write(UInt64(1))
        writer.write(UInt64(9))
        let chunk = SegmentEncoder.Chunk(records: writer.bytes, recordCount: 3, checksum: CRC32C.checksum(writer.bytes))
        let read = try read(chunk, format: 1)
        #expect(read.map(\.entity) == [4, 7, 9])
        #expect(read.map(\.type) == [7, 7, 7])
        #expect(read.map(\.payload) == [[0xAA, 0xBB], [0xCC], nil])
    }

    @Test func largeBatchesAreChunkedAndEveryChunkStandsAlone() throws {
        let chunks = encode((0 ..< 10_000).map { R(entity: Int64($0), type: 1, payload: [UInt8](repeating: 1, count: 16)) })
        #expect(chunks.count > 1)
        #expect(chunks.allSatisfy { $0.records.count <= Segment.maxRecordsBytes + 64 })
        let all = try chunks.flatMap { try read($0) }
        #expect(all.map(\.entity) == (0 ..< 10_000).map(Int64.init), "deltas restart in each chunk")
    }

    @Test func aFlippedBitIsDamageNotData() throws {
        var chunk = encode([R(entity: 1, type: 1, payload: [1, 2, 3, 4])])[0]
        chunk.records[5] ^= 0x10
        #expect(throws: SegmentDamage.checksumMismatch) { try read(chunk) }
    }

    @Test func anUnknownFormatIsDamageNotData() {
        let chunk = encode([R(entity: 1, type: 1, payload: nil)])[0]
        #expect(throws: SegmentDamage.unknownFormat(4)) { try read(chunk, format: 4) }
    }

    @Test func aTornRecordIsDamageAndNothingIsPassedOn() throws {
        var chunk = encode([R(entity: 1, type: 1, payload: [1, 2, 3, 4]), R(entity: 2, type: 1, payload: [1, 2, 3, 4])])[0]
        chunk.records.removeLast(2)   // the second record torn, with a checksum that matches
        chunk.checksum = CRC32C.checksum(chunk.records)
        var seen = 0
        #expect(throws: SegmentDamage.self) {
            try chunk.records.withUnsafeBytes { bytes in
                try SegmentReader.forEachRecord(format: Segment.format, recordCount: 2, checksum: chunk.checksum, records: bytes) { _ in seen += 1 }
            }
        }
        #expect(seen == 0, "a row is applied whole or not at all")
    }

    @Test func aRecordCountThatDisagreesIsDamage() throws {
        let chunk = encode([R(entity: 1, type: 1, payload: nil)])[0]
        #expect(throws: SegmentDamage.self) {
            try chunk.records.withUnsafeBytes { bytes in
                try SegmentReader.forEachRecord(format: Segment.format, recordCount: 2, checksum: chunk.checksum, records: bytes) { _ in }
            }
        }
    }

    @Test func anEntityNumberPastInt64IsDamage() throws {
        var writer = PayloadWriter()
        writer.write(UInt64(1) << 4)        // type 1, puts, a delta and a length per record
        writer.write(UInt64(1))             // version
        writer.write(UInt64(2))             // two entries
        writer.write(UInt64(Int64.max))     // the first: Int64.max
        writer.write(UInt64(0))
        writer.write(UInt64(5))             // the second: past it
        writer.write(UInt64(0))
        #expect(throws: SegmentDamage.self) {
            try writer.bytes.withUnsafeBytes { bytes in
                try SegmentReader.forEachRecord(format: Segment.format, recordCount: 2, checksum: CRC32C.checksum(writer.bytes), records: bytes) { _ in }
            }
        }
    }

    @Test func crc32cMatchesTheStandardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([]) == 0)
        let long = (0 ..< 1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var bytewise: UInt32 = 0xFFFF_FFFF
        for byte in long {
            bytewise ^= UInt32(byte)
            for _ in 0 ..< 8 { bytewise = bytewise & 1 == 1 ? (bytewise >> 1) ^ 0x82F6_3B78 : bytewise >> 1 }
        }
        #expect(CRC32C.checksum(long) == ~bytewise, "the sliced tables agree with the bit-by-bit definition")
    }

    @Test func idsKeepCommitOrderAcrossParts() {
        #expect(Segment.id(seq: 7, part: 0) < Segment.id(seq: 7, part: 3))
        #expect(Segment.id(seq: 7, part: 1_000) < Segment.id(seq: 8, part: 0))
        #expect(Segment.seq(ofID: Segment.id(seq: 123_456, part: 42)) == 123_456)
    }
}

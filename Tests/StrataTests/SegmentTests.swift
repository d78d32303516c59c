import Foundation
import Testing
@testable import Strata

@Suite struct SegmentTests {
    func records(_ body: (inout SegmentEncoder) -> Void) -> [SegmentEncoder.Chunk] {
        var encoder = SegmentEncoder()
        body(&encoder)
        return encoder.finish()
    }

    func read(_ chunk: SegmentEncoder.Chunk, format: Int = Segment.format) throws -> [(SegmentKey, Int?, [UInt8])] {
        var result: [(SegmentKey, Int?, [UInt8])] = []
        try chunk.records.withUnsafeBytes { bytes in
            try SegmentReader.forEachRecord(format: format, recordCount: chunk.recordCount, checksum: chunk.checksum,
                                            records: bytes) { result.append(($0.key, $0.version, Array($0.payload))) }
        }
        return result
    }

    @Test func putsAndTombstonesReadBackInOrder() throws {
        let chunks = records {
            $0.appendPut(SegmentKey(entity: 1, typeID: 3), version: 1, payload: [1, 2, 3])
            $0.appendRemoval(SegmentKey(entity: 300_000, typeID: 70))
            $0.appendPut(SegmentKey(entity: 1, typeID: 3), version: 2, payload: [])
        }
        #expect(chunks.count == 1)
        let read = try read(chunks[0])
        #expect(read.map(\.0) == [SegmentKey(entity: 1, typeID: 3), SegmentKey(entity: 300_000, typeID: 70), SegmentKey(entity: 1, typeID: 3)])
        #expect(read.map(\.1) == [1, nil, 2])
        #expect(read.map(\.2) == [[1, 2, 3], [], []])
    }

    @Test func aTransformPutCostsItsPayloadPlusAFewBytes() {
        var encoder = SegmentEncoder()
        let size = encoder.appendPut(SegmentKey(entity: 99_999, typeID: 1), version: 1, payload: [UInt8](repeating: 7, count: 16))
        #expect(size == 16 + 6, "header 1, entity 3, version 1, length 1")
    }

    @Test func largeBatchesAreChunked() throws {
        let chunks = records { encoder in
            for i in 0 ..< 10_000 { encoder.appendPut(SegmentKey(entity: Int64(i), typeID: 1), version: 1, payload: [UInt8](repeating: 1, count: 16)) }
        }
        #expect(chunks.count > 1)
        #expect(chunks.allSatisfy { $0.records.count <= Segment.maxRecordsBytes + 64 })
        #expect(try chunks.reduce(0) { $0 + (try read($1).count) } == 10_000)
    }

    @Test func rawRecordsAreCopiedByteForByte() throws {
        let original = records { $0.appendPut(SegmentKey(entity: 5, typeID: 9), version: 4, payload: [9, 9]) }[0]
        var copy = SegmentEncoder()
        try original.records.withUnsafeBytes { bytes in
            try SegmentReader.forEachRecord(format: 1, recordCount: 1, checksum: original.checksum, records: bytes) {
                copy.appendRaw($0.bytes)
            }
        }
        #expect(copy.finish()[0].records == original.records)
    }

    @Test func aFlippedBitIsDamageNotData() throws {
        var chunk = records { $0.appendPut(SegmentKey(entity: 1, typeID: 1), version: 1, payload: [1, 2, 3, 4]) }[0]
        chunk.records[5] ^= 0x10
        #expect(throws: SegmentDamage.checksumMismatch) { try read(chunk) }
    }

    @Test func anUnknownFormatIsDamageNotData() {
        let chunk = records { $0.appendRemoval(SegmentKey(entity: 1, typeID: 1)) }[0]
        #expect(throws: SegmentDamage.unknownFormat(2)) { try read(chunk, format: 2) }
    }

    @Test func aTornRecordIsDamageAndNothingIsPassedOn() throws {
        var chunk = records {
            $0.appendPut(SegmentKey(entity: 1, typeID: 1), version: 1, payload: [1, 2, 3, 4])
            $0.appendPut(SegmentKey(entity: 2, typeID: 1), version: 1, payload: [1, 2, 3, 4])
        }[0]
        chunk.records.removeLast(2)   // the second record torn: with a matching checksum
        chunk.checksum = CRC32C.checksum(chunk.records)
        var seen = 0
        #expect(throws: SegmentDamage.self) {
            try chunk.records.withUnsafeBytes { bytes in
                try SegmentReader.forEachRecord(format: 1, recordCount: 2, checksum: chunk.checksum, records: bytes) { _ in seen += 1 }
            }
        }
        #expect(seen == 0, "a row is applied whole or not at all")
    }

    @Test func aRecordCountThatDisagreesIsDamage() throws {
        let chunk = records { $0.appendRemoval(SegmentKey(entity: 1, typeID: 1)) }[0]
        #expect(throws: SegmentDamage.self) {
            try chunk.records.withUnsafeBytes { bytes in
                try SegmentReader.forEachRecord(format: 1, recordCount: 2, checksum: chunk.checksum, records: bytes) { _ in }
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

import Foundation
import Testing
@testable import Strata

/// Payloads coded against their key's previous one (format 3's coded groups).
@Suite struct XorCodingTests {
    func coded(_ payload: [UInt8], against base: [UInt8]) -> [UInt8] {
        var out = PayloadWriter()
        payload.withUnsafeBytes { p in base.withUnsafeBytes { b in XorCoding.encode(p, base: b, into: &out) } }
        return out.bytes
    }

    func decoded(_ bytes: [UInt8], against base: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        try bytes.withUnsafeBytes { raw in
            var reader = PayloadReader(raw)
            try base.withUnsafeBytes { try XorCoding.decode(&reader, base: $0, into: &out) }
            #expect(reader.isAtEnd)
        }
        return out
    }

    func floats(_ values: [Float]) -> [UInt8] {
        var writer = PayloadWriter()
        for value in values { writer.write(value) }
        return writer.bytes
    }

    @Test func everyLengthAndEveryByteComesBackBitExact() throws {
        var rng = SystemRandomNumberGenerator()
        for length in 0 ... XorCoding.maxBaseBytes {
            for _ in 0 ..< 20 {
                let base = (0 ..< length).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                // Some bytes changed, some not: every word shape occurs.
                let payload = base.map { Bool.random(using: &rng) ? $0 : UInt8.random(in: 0 ... 255, using: &rng) }
                let bytes = coded(payload, against: base)
                #expect(bytes.count == payload.withUnsafeBytes { p in base.withUnsafeBytes { XorCoding.codedSize(p, base: $0) } })
                #expect(try decoded(bytes, against: base) == payload, "length \(length)")
            }
        }
    }

    @Test func nanPayloadsAndNegativeZeroAreKept() throws {
        let base = floats([1.5, -0.0, .nan, 3])
        let payload = floats([Float(bitPattern: 0x7FC0_1234), 0.0, Float(bitPattern: 0xFFC0_0001), -0.0])
        #expect(try decoded(coded(payload, against: base), against: base) == payload)
    }

    @Test func aTransformWhoseXMovedTakesAFewBytesNotSixteen() {
        let base = floats([150, 42, 0, 1])
        #expect(coded(floats([300, 42, 0, 1]), against: base).count == 3, "mask, shape, one byte of exponent")
        #expect(coded(floats([150.25, 42, 0, 1]), against: base).count <= 5)
        #expect(coded(base, against: base).count == 1, "nothing changed: the mask alone")
    }

    @Test func damageInACodedPayloadIsDamageNotData() {
        let base = floats([1, 2])
        #expect(throws: SegmentDamage.self) { try decoded([0b100], against: base) }   // a word past the end
        #expect(throws: SegmentDamage.self) { try decoded([0b01, 0x0F], against: base) }   // lead 3 + trail 3
        #expect(throws: (any Error).self) { try decoded([0b01, 0x00, 1, 2], against: base) }   // cut short
    }

    // MARK: Groups

    struct R {
        var entity: Int64
        var payload: [UInt8]
        var base: [UInt8]?
    }

    func encode(_ records: [R]) -> [SegmentEncoder.Chunk] {
        var arena: [UInt8] = []
        var pending = records.map { r -> SegmentEncoder.Pending in
            let payload = arena.count ..< arena.count + r.payload.count
            arena += r.payload
            var base: Range<Int>?
            if let b = r.base {
                base = arena.count ..< arena.count + b.count
                arena += b
            }
            return .init(key: SegmentKey(entity: r.entity, typeID: 1), version: 1, payload: payload, base: base)
        }
        var encoder = SegmentEncoder()
        return arena.withUnsafeBytes { encoder.encode(&pending, arena: $0) }
    }

    func read(_ chunk: SegmentEncoder.Chunk, bases: [Int64: [UInt8]]?) throws -> (read: [Int64: [UInt8]], unresolved: [Int64]) {
        var result: [Int64: [UInt8]] = [:]
        var unresolved: [Int64] = []
        let lookup: SegmentReader.BaseLookup = { key, into in
            guard let base = bases?[key.entity] else { return false }
            into = base
            return true
        }
        try chunk.records.withUnsafeBytes { bytes in
            try SegmentReader.forEachRecord(format: Segment.format, recordCount: chunk.recordCount, checksum: chunk.checksum,
                                            records: bytes, base: bases == nil ? nil : lookup,
                                            unresolved: { unresolved.append($0.entity) }) { record in
                result[record.key.entity] = Array(record.payload)
            }
        }
        return (result, unresolved)
    }

    @Test func aCodedGroupReadsBackAgainstItsBasesAndLeavesOthersUnresolved() throws {
        let movers = (0 ..< 1000).map { i in
            R(entity: Int64(i * 100), payload: floats([Float(i) + 0.5, 7, 0, 1]), base: floats([Float(i), 7, 0, 1]))
        }
        let literal = encode(movers.map { R(entity: $0.entity, payload: $0.payload, base: nil) })
        let chunks = encode(movers + [R(entity: 5, payload: [1, 2, 3], base: nil)])
        #expect(chunks.count == 1)
        let bytes = chunks[0].records.count
        #expect(bytes * 2 < literal[0].records.count, "\(bytes) coded against \(literal[0].records.count) whole")
        let bases = Dictionary(uniqueKeysWithValues: movers.map { ($0.entity, $0.base ?? []) })
        let (read, unresolved) = try read(chunks[0], bases: bases)
        #expect(read.count == 1001 && unresolved.isEmpty)
        for mover in movers { #expect(read[mover.entity] == mover.payload) }
        #expect(read[5] == [1, 2, 3])

        // No base at all, one base missing, one base changed: those records are not decoded,
        // they are unresolved; the rest of the row reads.
        let none = try self.read(chunks[0], bases: nil)
        #expect(none.read.keys.sorted() == [5] && none.unresolved.count == 1000)
        var missing = bases
        missing[50_000] = nil
        let withoutOne = try self.read(chunks[0], bases: missing)
        #expect(withoutOne.unresolved == [50_000] && withoutOne.read.count == 1000 && withoutOne.read[50_000] == nil)
        var changed = bases
        changed[50_000] = floats([5.25, 7, 0, 1])
        let wrong = try self.read(chunks[0], bases: changed)
        #expect(wrong.unresolved == [50_000] && wrong.read[50_000] == nil, "never decoded against the wrong base")
    }

    @Test func aRowShorterThanItsCodedPayloadsReads() throws {
        // One value whose x moved, alone in its row: 16 bytes coded in a few, so the row is
        // shorter than the payload its group names. It reads (it was once taken for damage,
        // and the row skipped whole: the value lost at the next open, and every value coded
        // after it unresolved).
        let base = floats([1, 2, 3, 4])
        let moved = floats([1.5, 2, 3, 4])
        let chunks = encode([R(entity: 2, payload: moved, base: base)])
        #expect(chunks.count == 1 && chunks[0].records.count < moved.count, "\(chunks.map(\.records.count)) bytes")
        let (read, unresolved) = try read(chunks[0], bases: [2: base])
        #expect(unresolved.isEmpty)
        #expect(read[2] == moved)
    }

    @Test func aPutIsWrittenWholeWhenCodingWouldNotSave() throws {
        // Every byte changed: coded, it would take more than the payload.
        let chunks = encode([R(entity: 1, payload: [1, 2, 3, 4, 5, 6, 7, 8], base: [9, 9, 9, 9, 9, 9, 9, 9]),
                             R(entity: 2, payload: [1, 2], base: [1, 2, 3])])   // lengths differ
        let (read, unresolved) = try read(chunks[0], bases: nil)   // no base needed: nothing was coded
        #expect(unresolved.isEmpty)
        #expect(read[1] == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(read[2] == [1, 2])
    }

    @Test func rowsInFormat2AreStillRead() throws {
        // Format 2, as builds before coded groups wrote it: header = type << 3 | dense << 2 | fixed << 1 | removed.
        var writer = PayloadWriter()
        writer.write(UInt64(7) << 3 | 4 | 2)   // type 7, dense, fixed
        writer.write(UInt64(1))                 // version
        writer.write(UInt64(2))                 // two entries
        writer.write(UInt64(2))                 // two bytes each
        writer.write(UInt64(40))                // from entity 40
        [UInt8]([0xAA, 0xBB, 0xCC, 0xDD]).withUnsafeBytes { writer.append($0) }
        var result: [(Int64, [UInt8])] = []
        try writer.bytes.withUnsafeBytes { bytes in
            try SegmentReader.forEachRecord(format: 2, recordCount: 2, checksum: CRC32C.checksum(writer.bytes), records: bytes) {
                result.append(($0.key.entity, Array($0.payload)))
            }
        }
        #expect(result.map(\.0) == [40, 41])
        #expect(result.map(\.1) == [[0xAA, 0xBB], [0xCC, 0xDD]])
    }
}

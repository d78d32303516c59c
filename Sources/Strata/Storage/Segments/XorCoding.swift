/// The coding of a payload against the previous payload of its key (format 3's XOR groups,
/// see ``Segment``): lossless and bit-exact whatever the bytes are (a NaN's payload, −0.0,
/// an integer), since it is the XOR of the two, not arithmetic on floats.
///
/// Both payloads are read as little-endian 32-bit words (the last one padded with zero
/// bytes): a float that moves a little keeps its sign, exponent and high mantissa bits,
/// so its XOR with the one before has zero bytes at the top, and a value on a coarse grid
/// has zero bytes at the bottom too; a field that did not change is a zero word.
///
///     coded := mask{⌈words / 8⌉} shape{⌈changed / 2⌉} bytes*
///     mask   : bit w (least significant first) set when word w changed (its XOR is not 0)
///     shape  : per changed word, a nibble (the low one first): lead << 2 | trail, the zero
///              bytes at its top and at its bottom (lead + trail ≤ 3)
///     bytes  : per changed word, its 4 − lead − trail bytes in between, lowest first
///
/// A transform of four floats whose x moved: 1 + 1 + 1–4 bytes instead of 16. In the
/// segment log each coded record also carries a check of its base (`check`).
enum XorCoding {
    /// Payloads longer than this are never coded (nor kept as a key's base): what moves
    /// smoothly in a simulation is small, and the bases a writer keeps stay bounded.
    static let maxBaseBytes = 64

    /// The bytes `payload` takes coded against `base` (both `count` bytes long).
    static func codedSize(_ payload: UnsafeRawBufferPointer, base: UnsafeRawBufferPointer) -> Int {
        let words = (payload.count + 3) / 4
        var size = (words + 7) / 8
        var changed = 0
        for w in 0 ..< words {
            let x = word(payload, w) ^ word(base, w)
            guard x != 0 else { continue }
            changed += 1
            size += 4 - x.leadingZeroBitCount / 8 - x.trailingZeroBitCount / 8
        }
        return size + (changed + 1) / 2
    }

    /// Appends `payload` coded against `base` (both the same length) to `out`.
    static func encode(_ payload: UnsafeRawBufferPointer, base: UnsafeRawBufferPointer, into out: inout PayloadWriter) {
        let words = (payload.count + 3) / 4
        var xors: [UInt32] = []
        xors.reserveCapacity(words)
        for w in 0 ..< words { xors.append(word(payload, w) ^ word(base, w)) }
        for byte in 0 ..< (words + 7) / 8 {
            var mask: UInt8 = 0
            for bit in 0 ..< 8 where byte * 8 + bit < words && xors[byte * 8 + bit] != 0 { mask |= 1 << bit }
            out.write(mask)
        }
        var nibbles: [UInt8] = []
        for x in xors where x != 0 { nibbles.append(UInt8(x.leadingZeroBitCount / 8) << 2 | UInt8(x.trailingZeroBitCount / 8)) }
        for pair in stride(from: 0, to: nibbles.count, by: 2) {
            out.write(nibbles[pair] | (pair + 1 < nibbles.count ? nibbles[pair + 1] << 4 : 0))
        }
        for x in xors where x != 0 {
            let trail = x.trailingZeroBitCount / 8
            for byte in trail ..< 4 - x.leadingZeroBitCount / 8 { out.write(UInt8(truncatingIfNeeded: x >> (8 * byte))) }
        }
    }

    /// Reads one coded payload from `reader` against `base`, into `out` (which it sets to
    /// `base.count` bytes). Damage (a shape out of range, a byte past the payload's end, a
    /// truncation) throws ``SegmentDamage``.
    static func decode(_ reader: inout PayloadReader, base: UnsafeRawBufferPointer, into out: inout [UInt8]) throws {
        let count = base.count
        let words = (count + 3) / 4
        out.removeAll(keepingCapacity: true)
        out.append(contentsOf: base)
        let masks = try reader.readBytes(count: (words + 7) / 8)
        var changed: [Int] = []
        for w in 0 ..< words where masks[w / 8] & (1 << (w % 8)) != 0 { changed.append(w) }
        // Bits past the last word are never set.
        if words % 8 != 0, let last = masks.last, last >> (words % 8) != 0 {
            throw SegmentDamage.malformed("a coded payload's mask names a word past its end")
        }
        let shapes = try reader.readBytes(count: (changed.count + 1) / 2)
        for (index, w) in changed.enumerated() {
            let nibble = index % 2 == 0 ? shapes[index / 2] & 0x0F : shapes[index / 2] >> 4
            let lead = Int(nibble >> 2), trail = Int(nibble & 3)
            let first = w * 4 + trail, end = w * 4 + 4 - lead
            guard lead + trail <= 3, end <= count else {
                throw SegmentDamage.malformed("a coded payload's word \(w) is out of range")
            }
            let bytes = try reader.readBytes(count: end - first)
            for i in 0 ..< bytes.count { out[first + i] ^= bytes[i] }
        }
        if changed.count % 2 == 1, let last = shapes.last, last >> 4 != 0 {
            throw SegmentDamage.malformed("a coded payload's unused shape is not zero")
        }
    }

    /// Moves `reader` past one coded payload of `count` bytes without its base (a record
    /// whose base the reader does not have), checking its shape as ``decode(_:base:into:)`` does.
    static func skip(_ reader: inout PayloadReader, count: Int) throws {
        let zeros = [UInt8](repeating: 0, count: count)
        var ignored: [UInt8] = []
        try zeros.withUnsafeBytes { try decode(&reader, base: $0, into: &ignored) }
    }

    /// The check a coded record carries of its base: the low 16 bits of its CRC-32C. A
    /// reader whose base differs (a row before it lost) finds out, but for one base in 65,536.
    static func check(_ base: [UInt8]) -> UInt16 { UInt16(truncatingIfNeeded: CRC32C.checksum(base)) }

    static func check(_ base: UnsafeRawBufferPointer) -> UInt16 { UInt16(truncatingIfNeeded: CRC32C.checksum(base)) }

    /// Word `w` of `bytes`, little-endian, zero-padded past the end.
    @inline(__always)
    private static func word(_ bytes: UnsafeRawBufferPointer, _ w: Int) -> UInt32 {
        let start = w * 4
        if start + 4 <= bytes.count { return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)) }
        var value: UInt32 = 0
        for i in start ..< bytes.count { value |= UInt32(bytes[i]) << (8 * (i - start)) }
        return value
    }
}

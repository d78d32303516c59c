import Foundation

/// Appends a component's compact binary encoding.
///
/// Integers are LEB128 varints (signed ones zig-zag encoded), floating-point numbers
/// their little-endian IEEE bits, strings and byte arrays a varint length and the bytes.
/// A `Transform` of four `Float`s is 16 bytes; the same value through JSON is ~60.
public struct PayloadWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Why the last encoding into this buffer failed (a `Codable` component whose
    /// `encode(to: Encoder)` threw): the writer rejects and parks that one row.
    var encodingFailure: String?

    /// Empties the buffer, keeping its storage (the writer thread reuses one buffer).
    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        encodingFailure = nil
    }

    /// Drops what was written after the first `count` bytes.
    mutating func truncate(to count: Int) { bytes.removeLast(bytes.count - count) }

    public mutating func write(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    public mutating func write(_ value: Int64) {
        write(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func write(_ value: Int) { write(Int64(value)) }
    public mutating func write(_ value: Int32) { write(Int64(value)) }
    public mutating func write(_ value: UInt32) { write(UInt64(value)) }
    public mutating func write(_ value: Bool) { bytes.append(value ? 1 : 0) }
    public mutating func write(_ value: UInt8) { bytes.append(value) }

    public mutating func write(_ value: Float) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func write(_ value: Double) {
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func write(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            write(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func write(_ value: [UInt8]) {
        write(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    public mutating func write(_ value: [Float]) {
        write(UInt64(value.count))
        for element in value { write(element) }
    }

    public mutating func write(_ value: EntityID) {
        value.withBytes { bytes.append(contentsOf: $0) }
    }

    /// Appends raw bytes, without a length.
    mutating func append(_ raw: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: raw)
    }

    /// Appends a little-endian `UInt32` (a count patched later: ``patchUInt32(_:at:)``).
    mutating func appendUInt32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Overwrites the four bytes at `offset` with a little-endian `UInt32`.
    mutating func patchUInt32(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for index in 0 ..< 4 { bytes[offset + index] = raw[index] }
        }
    }
}

/// Reads a payload written by ``PayloadWriter``, failing cleanly on truncated input.
///
/// A reader borrows the bytes it reads: use it only inside the closure that lent them.
/// Its reads are inlinable: a component's decoder, in the host's module, reads its
/// fields without a call each (a pull or a reload decodes thousands of values).
public struct PayloadReader {
    @usableFromInline let buffer: UnsafeRawBufferPointer
    @usableFromInline var position = 0

    @inlinable
    public init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    /// Read position in bytes.
    @inlinable
    public var offset: Int { position }

    /// Whether every byte has been read.
    @inlinable
    public var isAtEnd: Bool { position >= buffer.count }

    @inlinable @inline(__always)
    mutating func take(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, buffer.count &- position >= count else { throw truncated(needing: count) }
        let start = position
        position = start &+ count
        return UnsafeRawBufferPointer(rebasing: buffer[start ..< start &+ count])
    }

    @usableFromInline
    func truncated(needing count: Int) -> PayloadError {
        .truncated(needed: count, offset: position, size: buffer.count)
    }

    @inlinable
    public mutating func read() throws -> UInt64 {
        guard position < buffer.count else { throw truncated(needing: 1) }
        let first = buffer[position]
        guard first >= 0x80 else {   // one byte: most counts, versions and flags
            position &+= 1
            return UInt64(first)
        }
        return try readLongVarint()
    }

    @usableFromInline
    mutating func readLongVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try take(1)[0]
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw PayloadError.invalid("varint longer than 10 bytes at offset \(position)") }
        }
    }

    @inlinable
    public mutating func read() throws -> Int64 {
        let raw: UInt64 = try read()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    @inlinable
    public mutating func read() throws -> Int { Int(try read() as Int64) }

    @inlinable
    public mutating func read() throws -> Int32 {
        let wide: Int64 = try read()
        guard let narrow = Int32(exactly: wide) else { throw PayloadError.invalid("\(wide) does not fit Int32") }
        return narrow
    }

    @inlinable
    public mutating func read() throws -> UInt32 {
        let wide: UInt64 = try read()
        guard let narrow = UInt32(exactly: wide) else { throw PayloadError.invalid("\(wide) does not fit UInt32") }
        return narrow
    }

    @inlinable
    public mutating func read() throws -> Bool { try take(1)[0] != 0 }
    @inlinable
    public mutating func read() throws -> UInt8 { try take(1)[0] }

    @inlinable
    public mutating func read() throws -> Float {
        Float(bitPattern: UInt32(littleEndian: try take(4).loadUnaligned(as: UInt32.self)))
    }

    @inlinable
    public mutating func read() throws -> Double {
        Double(bitPattern: UInt64(littleEndian: try take(8).loadUnaligned(as: UInt64.self)))
    }

    /// A little-endian `UInt32` (``PayloadWriter/appendUInt32(_:)``).
    mutating func readFixedUInt32() throws -> UInt32 {
        UInt32(littleEndian: try take(4).loadUnaligned(as: UInt32.self))
    }

    /// A varint count, no larger than the bytes left (each element takes at least one).
    @inlinable
    mutating func readCount() throws -> Int {
        let count: UInt64 = try read()
        guard count <= UInt64(buffer.count &- position) else { throw truncated(needing: Int(clamping: count)) }
        return Int(count)
    }

    @inlinable
    public mutating func read() throws -> String {
        let utf8 = try take(try readCount())
        return String(decoding: utf8, as: UTF8.self)
    }

    @inlinable
    public mutating func read() throws -> [UInt8] {
        Array(try take(try readCount()))
    }

    /// A length-prefixed byte string, borrowed from the buffer (no copy).
    @inlinable
    mutating func readBytes() throws -> UnsafeRawBufferPointer {
        try take(try readCount())
    }

    /// The next `count` bytes, borrowed from the buffer (no copy).
    @inlinable
    mutating func readBytes(count: Int) throws -> UnsafeRawBufferPointer {
        try take(count)
    }

    public mutating func read() throws -> [Float] {
        let count = try readCount()
        var result = [Float]()
        result.reserveCapacity(count)
        for _ in 0 ..< count { result.append(try read()) }
        return result
    }

    public mutating func read() throws -> EntityID {
        guard let id = EntityID(bytes: try take(16)) else { throw PayloadError.invalid("an entity id that is not 16 bytes") }
        return id
    }
}

/// A payload that cannot be decoded.
public enum PayloadError: Error, CustomStringConvertible, Equatable {
    case truncated(needed: Int, offset: Int, size: Int)
    case invalid(String)

    public var description: String {
        switch self {
        case let .truncated(needed, offset, size):
            "payload truncated: needed \(needed) bytes at offset \(offset) of \(size)"
        case let .invalid(message):
            "invalid payload: \(message)"
        }
    }
}

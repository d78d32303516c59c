import Foundation

/// Decodes a value written by ``PayloadEncoder`` (the format is described there),
/// reading the payload in the order it was written.
///
/// A payload that ends early or holds a value out of its type's range throws
/// ``PayloadError``: the engine then keeps the row untouched and reports it, as for a
/// hand-written decoder. To read an older layout after a change, switch on the `version`
/// the component's `init(from:version:)` receives and decode the old shape (a `Codable`
/// struct of its own) with `PayloadReader.decode(_:)`.
final class PayloadDecoder: Decoder {
    var reader: PayloadReader
    /// A nested container's key read by `allKeys` and not yet consumed by `nestedContainer`.
    var pendingKey: String?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(reader: PayloadReader) {
        self.reader = reader
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try UnkeyedContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self)
    }

    // MARK: Values

    func readPresence() throws -> Bool {
        let byte: UInt8 = try reader.read()
        guard byte <= 1 else { throw PayloadError.invalid("presence byte \(byte) at offset \(reader.offset - 1)") }
        return byte == 1
    }

    /// An array's or a dictionary's count. Not bounded by the bytes left: elements of an
    /// empty struct take none (a reserve is bounded instead: ``reserve(_:)``).
    func readCount() throws -> Int {
        let count: UInt64 = try reader.read()
        guard count <= UInt64(Int32.max) else { throw PayloadError.invalid("a count of \(count) elements") }
        return Int(count)
    }

    /// The capacity to reserve for `count` elements: a corrupt count must not allocate gigabytes.
    static func reserve(_ count: Int) -> Int { min(count, 4096) }

    func signed<T: FixedWidthInteger & SignedInteger>(_ type: T.Type) throws -> T {
        let wide: Int64 = try reader.read()
        guard let value = T(exactly: wide) else { throw PayloadError.invalid("\(wide) does not fit \(T.self)") }
        return value
    }

    func unsigned<T: FixedWidthInteger & UnsignedInteger>(_ type: T.Type) throws -> T {
        let wide: UInt64 = try reader.read()
        guard let value = T(exactly: wide) else { throw PayloadError.invalid("\(wide) does not fit \(T.self)") }
        return value
    }

    /// Any value: the shapes this format reads its own way first (as ``PayloadEncoder``
    /// wrote them), then the type's own `init(from:)` with this decoder.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if let value = try decodeKnownShape(type) { return value }
        return try T(from: self)
    }

    /// The shapes read the format's own way, or nil for any other type. Each value is cast
    /// to `T` only after `T` was found to be its type, so the cast cannot fail.
    private func decodeKnownShape<T: Decodable>(_ type: T.Type) throws -> T? {
        if T.self == Float.self { return try reader.read() as Float as? T }
        if T.self == Double.self { return try reader.read() as Double as? T }
        if T.self == Int.self { return try reader.read() as Int as? T }
        if T.self == String.self { return try reader.read() as String as? T }
        if T.self == Bool.self { return try reader.read() as Bool as? T }
        if T.self == UInt8.self { return try reader.read() as UInt8 as? T }
        if T.self == [Float].self { return try reader.read() as [Float] as? T }
        if T.self == [UInt8].self { return try reader.read() as [UInt8] as? T }
        if T.self == UUID.self { return try (reader.read() as EntityID).uuid as? T }
        if T.self == EntityID.self { return try reader.read() as EntityID as? T }
        if T.self == Data.self { return Data(try reader.readBytes()) as? T }
        if let optional = T.self as? any _PayloadDecodableOptional.Type { return try optional._decodePresence(from: self) as? T }
        if let sequence = T.self as? any _PayloadDecodableSequence.Type { return try sequence._decodeElements(from: self) as? T }
        return nil
    }

    /// A bare `decodeNil`: optionals are read with `decodeIfPresent` (their presence byte).
    static let nilOutsideOptional = DecodingError.dataCorrupted(
        .init(codingPath: [], debugDescription: "the payload format reads nil only for optionals (use decodeIfPresent)"))

    // MARK: Containers

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: PayloadDecoder
        var codingPath: [any CodingKey] { [] }
        /// Keys are not written (every field "is there", in the order it is asked for),
        /// but for the one a nested container is opened under: an enum's case, which its
        /// synthesized decoding learns from `allKeys` (asked twice) before it opens it.
        var allKeys: [Key] {
            if decoder.pendingKey == nil { decoder.pendingKey = try? decoder.reader.read() as String }
            return decoder.pendingKey.flatMap(Key.init(stringValue:)).map { [$0] } ?? []
        }
        func contains(_ key: Key) -> Bool { true }

        func decodeNil(forKey key: Key) throws -> Bool { throw PayloadDecoder.nilOutsideOptional }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.reader.read() }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder.reader.read() }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder.reader.read() }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder.reader.read() }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder.signed(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder.signed(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder.signed(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder.signed(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder.signed(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder.unsigned(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder.reader.read() }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder.unsigned(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder.unsigned(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder.unsigned(type) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder.decodeValue(type) }

        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(type) }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(type) }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(type) }
        func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(type) }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(type) }
        func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(type) }
        func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(type) }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(type) }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(type) }
        func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(type) }
        func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(type) }
        func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(type) }
        func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(type) }
        func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(type) }
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(type) }

        private func present<T: Decodable>(_ type: T.Type) throws -> T? {
            try decoder.readPresence() ? try decoder.decodeValue(type) : nil
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                                  forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            // The key ``PayloadEncoder`` wrote before the container: read by `allKeys` already, or now.
            if decoder.pendingKey == nil { _ = try decoder.reader.read() as String }
            decoder.pendingKey = nil
            return try decoder.container(keyedBy: type)
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try decoder.unkeyedContainer() }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
    }

    /// Elements after the 4-byte count ``PayloadEncoder``'s unkeyed container writes.
    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let decoder: PayloadDecoder
        let elements: Int
        var count: Int? { elements }
        private(set) var currentIndex = 0
        var codingPath: [any CodingKey] { [] }
        var isAtEnd: Bool { currentIndex >= elements }

        init(decoder: PayloadDecoder) throws {
            self.decoder = decoder
            elements = Int(try decoder.reader.readFixedUInt32())
        }

        private mutating func next() throws {
            guard !isAtEnd else { throw PayloadError.invalid("read past the \(elements) elements of a container") }
            currentIndex += 1
        }

        mutating func decodeNil() throws -> Bool { throw PayloadDecoder.nilOutsideOptional }
        mutating func decode(_ type: Bool.Type) throws -> Bool { try next(); return try decoder.reader.read() }
        mutating func decode(_ type: String.Type) throws -> String { try next(); return try decoder.reader.read() }
        mutating func decode(_ type: Double.Type) throws -> Double { try next(); return try decoder.reader.read() }
        mutating func decode(_ type: Float.Type) throws -> Float { try next(); return try decoder.reader.read() }
        mutating func decode(_ type: Int.Type) throws -> Int { try next(); return try decoder.signed(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(); return try decoder.signed(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(); return try decoder.signed(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(); return try decoder.signed(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(); return try decoder.signed(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next(); return try decoder.unsigned(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(); return try decoder.reader.read() }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(); return try decoder.unsigned(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(); return try decoder.unsigned(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(); return try decoder.unsigned(type) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(); return try decoder.decodeValue(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            try next()
            return try decoder.container(keyedBy: type)
        }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next()
            return try decoder.unkeyedContainer()
        }
        mutating func superDecoder() throws -> any Decoder {
            try next()
            return decoder
        }
    }

    struct SingleValueContainer: SingleValueDecodingContainer {
        let decoder: PayloadDecoder
        var codingPath: [any CodingKey] { [] }

        /// Never nil: an optional is read through its presence byte (`decodeValue`), and a
        /// bare nil is never written (``PayloadEncoder/nilOutsideOptional``).
        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { try decoder.reader.read() }
        func decode(_ type: String.Type) throws -> String { try decoder.reader.read() }
        func decode(_ type: Double.Type) throws -> Double { try decoder.reader.read() }
        func decode(_ type: Float.Type) throws -> Float { try decoder.reader.read() }
        func decode(_ type: Int.Type) throws -> Int { try decoder.signed(type) }
        func decode(_ type: Int8.Type) throws -> Int8 { try decoder.signed(type) }
        func decode(_ type: Int16.Type) throws -> Int16 { try decoder.signed(type) }
        func decode(_ type: Int32.Type) throws -> Int32 { try decoder.signed(type) }
        func decode(_ type: Int64.Type) throws -> Int64 { try decoder.signed(type) }
        func decode(_ type: UInt.Type) throws -> UInt { try decoder.unsigned(type) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.reader.read() }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.unsigned(type) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.unsigned(type) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.unsigned(type) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(type) }
    }
}

import Foundation

/// Encodes a `Codable` value into the compact binary form of ``PayloadWriter``: the
/// default encoding of a component that is `Codable` (`Component+Codable.swift`).
///
/// The format is positional, like a hand-written payload: a struct is its fields in the
/// order its `encode(to:)` writes them, with no keys; numbers, strings and byte arrays as
/// ``PayloadWriter`` writes them; an optional a presence byte (0 or 1) and then the
/// value; an array or a dictionary a varint count and then its elements (a dictionary's
/// key and value alternate); a `UUID` or an ``EntityID`` its 16 bytes; `Data` a varint
/// length and its bytes. A container a custom `encode(to:)` opens without a count known
/// ahead (`unkeyedContainer()`) gets a 4-byte count, patched as elements arrive. An enum
/// with associated values is its case's name and then the case's values.
///
/// Because keys are not written, decoding must read the fields in the order they were
/// written: the synthesized `Codable` conformances do, and so does any hand-written pair
/// that uses `encodeIfPresent`/`decodeIfPresent` for its optionals. Reordering,
/// adding or removing a field changes the encoding: bump the component's
/// `payloadVersion` and decode the older layout (see ``PayloadDecoder``).
final class PayloadEncoder: Encoder {
    var writer: PayloadWriter
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(writer: consuming PayloadWriter) {
        self.writer = writer
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(encoder: self)
    }

    // MARK: Values

    func encodeSigned(_ value: Int64) { writer.write(value) }
    func encodeUnsigned(_ value: UInt64) { writer.write(value) }

    /// Any value: the shapes this format writes its own way first, then the value's
    /// own `encode(to:)` with this encoder.
    func encodeValue<T: Encodable>(_ value: T) throws {
        switch value {
        case let v as Float: writer.write(v)
        case let v as Double: writer.write(v)
        case let v as Int: writer.write(v)
        case let v as String: writer.write(v)
        case let v as Bool: writer.write(v)
        case let v as UInt8: writer.write(v)
        case let v as [Float]: writer.write(v)
        case let v as [UInt8]: writer.write(v)
        case let v as UUID: withUnsafeBytes(of: v.uuid) { writer.append($0) }
        case let v as EntityID: writer.write(v)
        case let v as Data: v.withUnsafeBytes { raw in
            writer.write(UInt64(raw.count))
            writer.append(raw)
        }
        case let v as any _PayloadEncodableOptional: try v._encodePresence(to: self)
        case let v as any _PayloadEncodableSequence: try v._encodeElements(to: self)
        default: try value.encode(to: self)
        }
    }

    /// A bare `encodeNil`: this format writes nil only as an optional's presence byte, so
    /// a nil the decoder could not tell from a value is refused (synthesized conformances
    /// never write one; hand-written ones use `encodeIfPresent`).
    static let nilOutsideOptional = EncodingError.invalidValue(
        Optional<Int>.none as Any,
        .init(codingPath: [], debugDescription: "the payload format writes nil only for optionals (use encodeIfPresent)"))

    // MARK: Containers

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: PayloadEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil(forKey key: Key) throws { throw PayloadEncoder.nilOutsideOptional }
        mutating func encode(_ value: Bool, forKey key: Key) throws { encoder.writer.write(value) }
        mutating func encode(_ value: String, forKey key: Key) throws { encoder.writer.write(value) }
        mutating func encode(_ value: Double, forKey key: Key) throws { encoder.writer.write(value) }
        mutating func encode(_ value: Float, forKey key: Key) throws { encoder.writer.write(value) }
        mutating func encode(_ value: Int, forKey key: Key) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { encoder.encodeSigned(value) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { encoder.writer.write(value) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { encoder.encodeUnsigned(value) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try encoder.encodeValue(value) }

        // An absent optional is written (a presence byte), never skipped: fields are positional.
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try present(value) }
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try present(value) }

        private func present<T: Encodable>(_ value: T?) throws {
            guard let value else { return encoder.writer.write(false) }
            encoder.writer.write(true)
            try encoder.encodeValue(value)
        }

        /// Writes the key: an enum with associated values (its synthesized conformance)
        /// opens one nested container, keyed by its case, and its decoding asks `allKeys`.
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                           forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            encoder.writer.write(key.stringValue)
            return encoder.container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { encoder.unkeyedContainer() }
        mutating func superEncoder() -> any Encoder { encoder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
    }

    /// Elements after a 4-byte count, patched at each element (the count is not known ahead).
    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let encoder: PayloadEncoder
        let countOffset: Int
        private(set) var count = 0
        var codingPath: [any CodingKey] { [] }

        init(encoder: PayloadEncoder) {
            self.encoder = encoder
            countOffset = encoder.writer.bytes.count
            encoder.writer.appendUInt32(0)
        }

        private mutating func counted() {
            count += 1
            encoder.writer.patchUInt32(UInt32(count), at: countOffset)
        }

        mutating func encodeNil() throws { throw PayloadEncoder.nilOutsideOptional }
        mutating func encode(_ value: Bool) throws { counted(); encoder.writer.write(value) }
        mutating func encode(_ value: String) throws { counted(); encoder.writer.write(value) }
        mutating func encode(_ value: Double) throws { counted(); encoder.writer.write(value) }
        mutating func encode(_ value: Float) throws { counted(); encoder.writer.write(value) }
        mutating func encode(_ value: Int) throws { counted(); encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int8) throws { counted(); encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int16) throws { counted(); encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int32) throws { counted(); encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int64) throws { counted(); encoder.encodeSigned(value) }
        mutating func encode(_ value: UInt) throws { counted(); encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt8) throws { counted(); encoder.writer.write(value) }
        mutating func encode(_ value: UInt16) throws { counted(); encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt32) throws { counted(); encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt64) throws { counted(); encoder.encodeUnsigned(value) }
        mutating func encode<T: Encodable>(_ value: T) throws { counted(); try encoder.encodeValue(value) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            counted()
            return encoder.container(keyedBy: keyType)
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            counted()
            return encoder.unkeyedContainer()
        }
        mutating func superEncoder() -> any Encoder {
            counted()
            return encoder
        }
    }

    struct SingleValueContainer: SingleValueEncodingContainer {
        let encoder: PayloadEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil() throws { throw PayloadEncoder.nilOutsideOptional }
        mutating func encode(_ value: Bool) throws { encoder.writer.write(value) }
        mutating func encode(_ value: String) throws { encoder.writer.write(value) }
        mutating func encode(_ value: Double) throws { encoder.writer.write(value) }
        mutating func encode(_ value: Float) throws { encoder.writer.write(value) }
        mutating func encode(_ value: Int) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int8) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int16) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int32) throws { encoder.encodeSigned(Int64(value)) }
        mutating func encode(_ value: Int64) throws { encoder.encodeSigned(value) }
        mutating func encode(_ value: UInt) throws { encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt8) throws { encoder.writer.write(value) }
        mutating func encode(_ value: UInt16) throws { encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt32) throws { encoder.encodeUnsigned(UInt64(value)) }
        mutating func encode(_ value: UInt64) throws { encoder.encodeUnsigned(value) }
        mutating func encode<T: Encodable>(_ value: T) throws { try encoder.encodeValue(value) }
    }
}

import Foundation

// The shapes ``PayloadEncoder`` and ``PayloadDecoder`` write their own way, whatever their
// element types: optionals (a presence byte, so that fields stay positional), arrays and
// dictionaries (a varint count: their own `Codable` conformances do not say how many
// elements follow, or, for dictionaries keyed by strings, use keys this format drops).

protocol _PayloadEncodableOptional {
    func _encodePresence(to encoder: PayloadEncoder) throws
}

protocol _PayloadDecodableOptional {
    static func _decodePresence(from decoder: PayloadDecoder) throws -> Self
}

protocol _PayloadEncodableSequence {
    func _encodeElements(to encoder: PayloadEncoder) throws
}

protocol _PayloadDecodableSequence {
    static func _decodeElements(from decoder: PayloadDecoder) throws -> Self
}

extension Optional: _PayloadEncodableOptional where Wrapped: Encodable {
    func _encodePresence(to encoder: PayloadEncoder) throws {
        guard let self else { return encoder.writer.write(false) }
        encoder.writer.write(true)
        try encoder.encodeValue(self)
    }
}

extension Optional: _PayloadDecodableOptional where Wrapped: Decodable {
    static func _decodePresence(from decoder: PayloadDecoder) throws -> Self {
        try decoder.readPresence() ? try decoder.decodeValue(Wrapped.self) : nil
    }
}

extension PayloadEncoder {
    /// A varint count, then each element.
    func encodeCounted<C: Collection>(_ elements: C) throws where C.Element: Encodable {
        writer.write(UInt64(elements.count))
        for element in elements { try encodeValue(element) }
    }
}

extension PayloadDecoder {
    /// A varint count, then each element, handed to `add`; the count for a reserve.
    func decodeCounted<E: Decodable>(_ type: E.Type, reserve: (Int) -> Void, add: (E) -> Void) throws {
        let count = try readCount()
        reserve(Self.reserve(count))
        for _ in 0 ..< count { add(try decodeValue(type)) }
    }
}

extension Array: _PayloadEncodableSequence where Element: Encodable {
    func _encodeElements(to encoder: PayloadEncoder) throws { try encoder.encodeCounted(self) }
}

extension Array: _PayloadDecodableSequence where Element: Decodable {
    static func _decodeElements(from decoder: PayloadDecoder) throws -> Self {
        var result = [Element]()
        try decoder.decodeCounted(Element.self, reserve: { result.reserveCapacity($0) }, add: { result.append($0) })
        return result
    }
}

extension Dictionary: _PayloadEncodableSequence where Key: Encodable, Value: Encodable {
    func _encodeElements(to encoder: PayloadEncoder) throws {
        encoder.writer.write(UInt64(count))
        for (key, value) in self {
            try encoder.encodeValue(key)
            try encoder.encodeValue(value)
        }
    }
}

extension Dictionary: _PayloadDecodableSequence where Key: Decodable, Value: Decodable {
    static func _decodeElements(from decoder: PayloadDecoder) throws -> Self {
        let count = try decoder.readCount()
        var result = [Key: Value](minimumCapacity: PayloadDecoder.reserve(count))
        for _ in 0 ..< count {
            let key = try decoder.decodeValue(Key.self)
            result[key] = try decoder.decodeValue(Value.self)
        }
        return result
    }
}

extension Set: _PayloadEncodableSequence where Element: Encodable {
    func _encodeElements(to encoder: PayloadEncoder) throws { try encoder.encodeCounted(self) }
}

extension Set: _PayloadDecodableSequence where Element: Decodable {
    static func _decodeElements(from decoder: PayloadDecoder) throws -> Self {
        var result = Set()
        try decoder.decodeCounted(Element.self, reserve: { result.reserveCapacity($0) }, add: { result.insert($0) })
        return result
    }
}

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

extension Array: _PayloadEncodableSequence where Element: Encodable {
    func _encodeElements(to encoder: PayloadEncoder) throws {
        encoder.writer.write(UInt64(count))
        for element in self { try encoder.encodeValue(element) }
    }
}

extension Array: _PayloadDecodableSequence where Element: Decodable {
    static func _decodeElements(from decoder: PayloadDecoder) throws -> Self {
        let count = try decoder.readCount()
        var result = [Element]()
        result.reserveCapacity(PayloadDecoder.reserve(count))
        for _ in 0 ..< count { result.append(try decoder.decodeValue(Element.self)) }
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
    func _encodeElements(to encoder: PayloadEncoder) throws {
        encoder.writer.write(UInt64(count))
        for element in self { try encoder.encodeValue(element) }
    }
}

extension Set: _PayloadDecodableSequence where Element: Decodable {
    static func _decodeElements(from decoder: PayloadDecoder) throws -> Self {
        let count = try decoder.readCount()
        var result = Set(minimumCapacity: PayloadDecoder.reserve(count))
        for _ in 0 ..< count { result.insert(try decoder.decodeValue(Element.self)) }
        return result
    }
}

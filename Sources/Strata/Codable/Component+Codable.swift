import Foundation

/// A `Codable` component needs no hand-written payload: these defaults encode it with
/// ``PayloadEncoder``'s compact positional format (a `Transform` of four `Float`s is the
/// same 16 bytes either way).
///
/// ```swift
/// struct Inventory: Component, Codable {
///     static let typeName = "game.inventory"
///     static let tier = Tier.critical
///     var items: [String: Int]
///     var equipped: String?
/// }
/// ```
///
/// The cost is the `Codable` machinery: measured in `make bench-micro` (`codable:`
/// against `handwritten:`); keep a hand-written `encode(to:)` for the hot types that
/// change every tick. The layout follows the fields' order: adding, removing or
/// reordering one is a new `payloadVersion`, and `init(from:version:)` (written by hand
/// then) decodes the old layout, for example as a `Codable` struct of its own with
/// ``PayloadReader/decode(_:)``.
extension Component where Self: Codable {
    public func encode(to payload: inout PayloadWriter) {
        let start = payload.bytes.count
        let encoder = PayloadEncoder(writer: payload)
        payload = PayloadWriter(capacity: 0)
        do {
            // The component itself is a struct of fields, not one of the shapes `encodeValue`
            // looks for first (those casts cost more than encoding a small struct).
            try self.encode(to: encoder)
            payload = encoder.writer
        } catch {
            // Only a hand-written `encode(to: Encoder)` can fail here (a bare nil, or an
            // error of its own). The bytes written so far go; the failure stays with the
            // buffer, and the writer rejects and parks this one row (the rest of its batch
            // commits) instead of stopping the process.
            payload = encoder.writer
            payload.truncate(to: start)
            payload.encodingFailure = "\(Self.typeName): its Codable encoding failed: \(error)"
        }
    }

    public init(from payload: inout PayloadReader, version: Int) throws {
        let decoder = PayloadDecoder(reader: payload)
        try self.init(from: decoder)
        payload = decoder.reader
    }
}

extension PayloadReader {
    /// Reads a `Decodable` value written by `PayloadWriter.encode(_:)` or a `Codable`
    /// component's default encoding.
    public mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = PayloadDecoder(reader: self)
        let value = try decoder.decodeValue(type)
        self = decoder.reader
        return value
    }
}

extension PayloadWriter {
    /// Appends an `Encodable` value in the format `Codable` components use.
    public mutating func encode<T: Encodable>(_ value: T) throws {
        let encoder = PayloadEncoder(writer: self)
        self = PayloadWriter(capacity: 0)
        defer { self = encoder.writer }
        try encoder.encodeValue(value)
    }
}

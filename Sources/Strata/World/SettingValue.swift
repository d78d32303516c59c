import Foundation

/// A persisted setting's value (the specification, *Settings*: "flags in the database, not in
/// memory"): a flag, a count, a name, a number, or a small `Codable` value as JSON.
///
/// Stored in the `settings` table as text with a one-letter type tag (`b:1`, `i:42`,
/// `d:0.25`, `s:name`, `j:{…}`), so a row reads back as the type it was written with and
/// stays legible in `sqlite3` and `strata inspect`.
public enum SettingValue: Sendable, Equatable, CustomStringConvertible {
    case boolean(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    /// A small `Codable` value, JSON-encoded (``World/setSetting(encoding:for:)``).
    case json(String)

    /// The stored text.
    var storageText: String {
        switch self {
        case .boolean(let value): "b:" + (value ? "1" : "0")
        case .integer(let value): "i:\(value)"
        case .double(let value): "d:\(value)"   // Swift prints the shortest text that reads back exactly
        case .string(let value): "s:" + value
        case .json(let value): "j:" + value
        }
    }

    /// Reads stored text; nil if it is not in the format above (a newer build's type).
    init?(storageText text: String) {
        guard text.count >= 2, text.dropFirst().first == ":" else { return nil }
        let body = String(text.dropFirst(2))
        switch text.first {
        case "b" where body == "0" || body == "1": self = .boolean(body == "1")
        case "i": guard let value = Int64(body) else { return nil }; self = .integer(value)
        case "d": guard let value = Double(body) else { return nil }; self = .double(value)
        case "s": self = .string(body)
        case "j": self = .json(body)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .boolean(let value): "\(value)"
        case .integer(let value): "\(value)"
        case .double(let value): "\(value)"
        case .string(let value): "\"\(value)\""
        case .json(let value): value
        }
    }
}

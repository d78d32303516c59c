/// A configuration that cannot be used: where it is wrong, and what was expected.
///
/// ```
/// config.toml:14: persistence.critical_flush_delay_ms: must be below flush_interval_secs (10 s), got 12000
/// ```
public struct ConfigError: Error, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The file could not be read.
        case unreadable
        /// TOML syntax; `line` and `column` come from the parser.
        case syntax
        /// A key the schema does not have.
        case unknownKey
        /// A value of the wrong TOML type.
        case typeMismatch
        /// A value of the right type that is impossible (negative, out of range…).
        case invalidValue
    }

    public var kind: Kind
    /// The dotted key path (`persistence.battery_tiers.low`), when the error has one.
    public var keyPath: String?
    public var message: String
    public var source: String?
    public var line: Int?
    public var column: Int?

    public init(_ kind: Kind, keyPath: String? = nil, message: String, source: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.kind = kind
        self.keyPath = keyPath
        self.message = message
        self.source = source
        self.line = line
        self.column = column
    }

    public var description: String {
        var location = source ?? "config"
        if let line { location += ":\(line)" }
        if let column { location += ":\(column)" }
        if let keyPath { return "\(location): \(keyPath): \(message)" }
        return "\(location): \(message)"
    }
}

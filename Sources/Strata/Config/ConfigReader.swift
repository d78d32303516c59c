import Foundation
import TOMLKit

/// Reads one TOML table against the schema, key by key, remembering what it read so
/// that whatever is left over is reported as an unknown key.
///
/// TOMLKit's `Decodable` support reports a type mismatch as "key not found", with no
/// line; this reader checks each value's TOML type itself and names the key and the
/// type it found. Lines come from ``ConfigSourceMap``.
struct ConfigReader {
    private let table: TOMLTable
    private let path: String
    private let map: ConfigSourceMap
    private var read: Set<String> = []

    init(table: TOMLTable, path: String, map: ConfigSourceMap) {
        self.table = table
        self.path = path
        self.map = map
    }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func error(_ kind: ConfigError.Kind, _ key: String, _ message: String) -> ConfigError {
        let full = keyPath(key)
        return ConfigError(kind, keyPath: full, message: message, source: map.source, line: map.line(of: full))
    }

    private mutating func value(_ key: String) -> TOMLValueConvertible? {
        read.insert(key)
        return table[key]
    }

    private func mismatch(_ key: String, expected: String, found value: TOMLValueConvertible) -> ConfigError {
        error(.typeMismatch, key, "expected \(expected), found \(Self.describe(value))")
    }

    static func describe(_ value: TOMLValueConvertible) -> String {
        switch value.type {
        case .string: "a string (\"\(value.string ?? "")\")"
        case .int: "an integer (\(value.int.map(String.init) ?? ""))"
        case .double: "a float (\(value.double.map { String($0) } ?? ""))"
        case .bool: "a boolean (\(value.bool.map(String.init) ?? ""))"
        case .table: "a table"
        case .array: "an array"
        default: "a \(value.type)"
        }
    }

    /// Whether the table sets `key` (for a key whose default depends on another).
    func has(_ key: String) -> Bool { table[key] != nil }

    mutating func bool(_ key: String, default fallback: Bool) throws -> Bool {
        guard let value = value(key) else { return fallback }
        guard let bool = value.bool else { throw mismatch(key, expected: "a boolean (true or false)", found: value) }
        return bool
    }

    mutating func string(_ key: String, default fallback: String) throws -> String {
        guard let value = value(key) else { return fallback }
        guard let string = value.string else { throw mismatch(key, expected: "a string", found: value) }
        return string
    }

    mutating func int(_ key: String, default fallback: Int, range: ClosedRange<Int>, unit: String = "") throws -> Int {
        guard let value = value(key) else { return fallback }
        guard let int = value.int else { throw mismatch(key, expected: "an integer\(unit)", found: value) }
        guard range.contains(int) else {
            let bounds = range.upperBound == .max ? "at least \(range.lowerBound)" : "between \(range.lowerBound) and \(range.upperBound)"
            throw error(.invalidValue, key, "must be \(bounds)\(unit), got \(int)")
        }
        return int
    }

    /// A number (integer or float) within `range`.
    mutating func number(_ key: String, default fallback: Double, range: ClosedRange<Double>, unit: String = "") throws -> Double {
        guard let value = value(key) else { return fallback }
        let number: Double
        if let int = value.int { number = Double(int) }
        else if let double = value.double { number = double }
        else { throw mismatch(key, expected: "a number\(unit)", found: value) }
        guard range.contains(number) else {
            throw error(.invalidValue, key, "must be between \(range.lowerBound) and \(range.upperBound)\(unit), got \(Self.describe(value))")
        }
        return number
    }

    /// One of a fixed set of strings.
    mutating func choice<T: RawRepresentable & CaseIterable>(_ key: String, default fallback: T) throws -> T where T.RawValue == String {
        let raw = try string(key, default: fallback.rawValue)
        guard let value = T(rawValue: raw) else {
            throw error(.invalidValue, key, "must be one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), got \"\(raw)\"")
        }
        return value
    }

    /// A positive duration written as a number of `unit`s (integer or float), at least a
    /// millisecond (a smaller one would make a polling thread spin) and at most `max`
    /// (a larger one would overflow, or mean "never" by accident). With `allowZero`, 0 too.
    mutating func duration(_ key: String, default fallback: Duration, unit: DurationUnit, allowZero: Bool = false,
                           max: Duration = .seconds(365 * 86_400)) throws -> Duration {
        guard let value = value(key) else { return fallback }
        let number: Double
        if let int = value.int { number = Double(int) }
        else if let double = value.double { number = double }
        else { throw mismatch(key, expected: "a number of \(unit.name)", found: value) }
        let perUnit = unit == .seconds ? 1.0 : 1e-3
        let seconds = number * perUnit
        let low = 1e-3, high = max.seconds
        func shown(_ s: Double) -> String {
            let v = s / perUnit
            return v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
        }
        guard number.isFinite, (allowZero && number == 0) || (seconds >= low && seconds <= high) else {
            let range = "between \(shown(low)) and \(shown(high)) \(unit.name)" + (allowZero ? ", or 0" : "")
            throw error(.invalidValue, key, "must be \(range), got \(Self.describe(value))")
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// A size written in megabytes, returned in bytes.
    mutating func megabytes(_ key: String, default fallback: Int) throws -> Int {
        guard let value = value(key) else { return fallback }
        let number: Double
        if let int = value.int { number = Double(int) }
        else if let double = value.double { number = double }
        else { throw mismatch(key, expected: "a number of megabytes", found: value) }
        guard number.isFinite, number > 0, number <= 1024 * 1024 else {
            throw error(.invalidValue, key, "must be a positive number of megabytes, got \(Self.describe(value))")
        }
        return Int(number * 1024 * 1024)
    }

    mutating func table(_ key: String) throws -> ConfigReader? {
        guard let value = value(key) else { return nil }
        guard let table = value.table else { throw mismatch(key, expected: "a table ([\(keyPath(key))])", found: value) }
        return ConfigReader(table: table, path: keyPath(key), map: map)
    }

    /// Fails on the first key that was never read, listing the keys this table accepts.
    func rejectUnknownKeys(known: [String]) throws {
        for key in table.keys.sorted() where !read.contains(key) {
            let where_ = path.isEmpty ? "at the top level" : "in [\(path)]"
            throw error(.unknownKey, key, "unknown key \(where_); known keys: \(known.joined(separator: ", "))")
        }
    }
}

enum DurationUnit: Equatable {
    case seconds, milliseconds
    var name: String { self == .seconds ? "seconds" : "milliseconds" }
}

/// Finds the line of a dotted key in the TOML text, for errors the parser cannot place.
///
/// Understands `[table]` headers and `key = value` lines, which is how `config.toml`
/// is written; a key it cannot find gets no line rather than a wrong one.
struct ConfigSourceMap {
    let source: String?
    private var lines: [String: Int] = [:]

    init(text: String, source: String?) {
        self.source = source
        var table = ""
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") && !line.hasPrefix("[[") {
                if let end = line.firstIndex(of: "]") {
                    table = line[line.index(after: line.startIndex) ..< end].trimmingCharacters(in: .whitespaces)
                    lines[table] = lines[table] ?? number + 1
                }
            } else if let eq = line.firstIndex(of: "="), !line.hasPrefix("#") {
                let key = line[..<eq].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
                let full = table.isEmpty ? key : "\(table).\(key)"
                lines[full] = lines[full] ?? number + 1
            }
        }
    }

    func line(of keyPath: String) -> Int? { lines[keyPath] }
}


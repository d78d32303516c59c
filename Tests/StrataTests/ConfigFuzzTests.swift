import Foundation
import StrataCanvas
import Testing
@testable import Strata

/// 600 seeded mutations of the shipped `config.toml`: none crashes the reader, every
/// rejection names a key or a line, and every configuration accepted opens an engine.
@Suite struct ConfigFuzzTests {
    static let shipped: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try! String(contentsOf: root.appendingPathComponent("config.toml"), encoding: .utf8)
    }()

    /// Values a careless or hostile edit might leave.
    static let values = [
        "0", "-1", "1e-12", "1e10", "9.3e9", "9.3e12", "1e300", "-1e300", "inf", "nan", "9223372036854775807",
        "-9223372036854775808", "0.0000001", "\"\"", "\"x\"", "true", "[]", "{}", "1.5", "2147483648", "65536", "3",
    ]

    /// One mutation of `text`, chosen by `rng`.
    static func mutate(_ text: String, _ rng: inout SplitMix64) -> [UInt8] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let valueLines = lines.indices.filter { lines[$0].contains(" = ") && !lines[$0].hasPrefix("#") }
        switch rng.next() % 7 {
        case 0, 1, 2:   // a value replaced
            let i = valueLines[Int(rng.next() % UInt64(valueLines.count))]
            let key = lines[i].components(separatedBy: " = ")[0]
            lines[i] = "\(key) = \(values[Int(rng.next() % UInt64(values.count))])"
        case 3:         // a line removed or repeated
            let i = Int(rng.next() % UInt64(lines.count))
            if rng.next() % 2 == 0 { lines.remove(at: i) } else { lines.insert(lines[i], at: i) }
        case 4:         // a key renamed
            let i = valueLines[Int(rng.next() % UInt64(valueLines.count))]
            lines[i] = "x" + lines[i]
        default:        // bytes: a NUL, invalid UTF-8, a cut, noise
            var bytes = Array(lines.joined(separator: "\n").utf8)
            let at = Int(rng.next() % UInt64(bytes.count))
            switch rng.next() % 4 {
            case 0: bytes.insert(0, at: at)
            case 1: bytes.insert(0xFF, at: at)
            case 2: bytes.removeSubrange(at...)
            default: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
            }
            return bytes
        }
        return Array(lines.joined(separator: "\n").utf8)
    }

    @Test func mutatedConfigsAreRejectedByKeyOrLineOrOpen() throws {
        let directory = TestDirectory()
        let path = directory.url.appendingPathComponent("mutated.toml").path
        var rng = SplitMix64(seed: 20261123)
        var accepted = 0, rejected = 0
        for mutation in 0 ..< 600 {
            let bytes = Self.mutate(Self.shipped, &rng)
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            do {
                var config = try StrataConfig.load(path: path)
                accepted += 1
                // What check-config accepts must open: the converted values are sane.
                config.database.path = directory.url.appendingPathComponent("db-\(mutation).db").path
                config.metrics.countFsyncs = false
                config.persistence.power.source = .fallback
                let engine = try Engine.open(config: config, logger: quietLogger)
                try engine.shutdown()
            } catch let error as ConfigError {
                rejected += 1
                #expect(error.keyPath != nil || error.line != nil, "mutation \(mutation): \(error) names neither a key nor a line")
            }
        }
        #expect(rejected > 300)
        #expect(accepted > 50)
    }
}

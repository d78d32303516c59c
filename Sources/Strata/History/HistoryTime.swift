import Foundation

/// A time in the history window as a person writes it (`strata inspect --at`): an ISO 8601
/// time (`2026-11-26T09:30:00Z`, fractions of a second allowed), or a time relative to now
/// (`-30s`, `-5m`, `-2h`, `-1d`, `-1500ms`). Any thread.
package enum HistoryTime {
    /// Unix milliseconds for `text`, with `now` the time relative ones count back from.
    package static func parse(_ text: String, now: Int64) throws -> Int64 {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("-") {
            let units: [(suffix: String, milliseconds: Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
            for unit in units where trimmed.hasSuffix(unit.suffix) {
                let number = trimmed.dropFirst().dropLast(unit.suffix.count)
                if let value = Double(number), value >= 0, value.isFinite {
                    // Checked before the conversion: a span past the Unix epoch (or past what an
                    // Int64 holds) is no time a document has, never a trap.
                    let back = (value * unit.milliseconds).rounded()
                    guard back <= Double(max(now, 0)) else { throw HistoryError.timeOutOfRange(text) }
                    return now - Int64(back)
                }
            }
        } else {
            let formatter = ISO8601DateFormatter()
            for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime]] {
                formatter.formatOptions = options
                if let date = formatter.date(from: trimmed) {
                    let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
                    guard milliseconds >= 0, milliseconds < Self.year10000 else { throw HistoryError.timeOutOfRange(text) }
                    return Int64(milliseconds)
                }
            }
        }
        throw HistoryError.unreadableTime(text)
    }

    /// 10000-01-01T00:00:00Z in Unix milliseconds: the first time ISO 8601's four digits cannot write.
    static let year10000 = 253_402_300_800_000.0
}

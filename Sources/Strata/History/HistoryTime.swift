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
                    return now - Int64((value * unit.milliseconds).rounded())
                }
            }
        } else {
            let formatter = ISO8601DateFormatter()
            for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime]] {
                formatter.formatOptions = options
                if let date = formatter.date(from: trimmed) { return Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
            }
        }
        throw HistoryError.unreadableTime(text)
    }
}

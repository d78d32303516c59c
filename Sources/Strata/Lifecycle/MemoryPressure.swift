/// Linux memory pressure, from PSI (`/proc/pressure/memory`) and the cgroup v2
/// `memory.events` counters, turned into "low memory" warnings (the specification, *Flush events*: a low-memory
/// warning may precede termination, so every tier is flushed and the WAL checkpointed).
///
/// Pure: parsing and the edge-triggered decision. ``MemoryPressureMonitor`` reads the files.
public enum MemoryPressure {
    /// PSI's `some avg10` (percent of the last 10 s in which some task stalled on memory).
    ///
    ///     some avg10=1.53 avg60=0.80 avg300=0.21 total=123456
    ///     full avg10=0.00 avg60=0.00 avg300=0.00 total=0
    public static func someAvg10(psi text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("some ") {
            for field in line.split(separator: " ") where field.hasPrefix("avg10=") {
                return Double(field.dropFirst("avg10=".count))
            }
        }
        return nil
    }

    /// The counters of a cgroup v2 `memory.events` file (`low`, `high`, `max`, `oom`, `oom_kill`…).
    public static func events(_ text: String) -> [String: Int] {
        var counters: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Int(parts[1]) { counters[String(parts[0])] = value }
        }
        return counters
    }

    /// The cgroup v2 path of a process, from its `/proc/PID/cgroup` (`0::/user.slice/…`).
    public static func cgroupPath(procSelfCgroup text: String) -> String? {
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            return String(line.dropFirst(3))
        }
        return nil
    }

    /// Decides when readings amount to a new warning.
    ///
    /// PSI is edge-triggered with hysteresis: a warning when `some avg10` reaches the
    /// threshold, re-armed once it falls below half of it, so a sustained stall is one
    /// warning, not one per poll. A rise of the `high`, `max`, `oom` or `oom_kill`
    /// counters is a warning each time (the first reading is the baseline).
    public struct Detector: Sendable, Equatable {
        public let thresholdPercent: Double
        private var armed = true
        private var lastEvents: [String: Int]?

        public init(thresholdPercent: Double) { self.thresholdPercent = thresholdPercent }

        /// Feeds one reading; returns why it is a warning, or nil.
        public mutating func update(someAvg10: Double?, events: [String: Int]?) -> String? {
            var reason: String?
            if let avg = someAvg10 {
                if armed && avg >= thresholdPercent {
                    armed = false
                    reason = "memory pressure: some avg10 = \(avg)% (threshold \(thresholdPercent)%)"
                } else if !armed && avg < thresholdPercent / 2 {
                    armed = true
                }
            }
            if let events {
                if let last = lastEvents {
                    for key in ["high", "max", "oom", "oom_kill"] where (events[key] ?? 0) > (last[key] ?? 0) {
                        reason = reason ?? "cgroup memory.events: \(key) rose to \(events[key] ?? 0)"
                    }
                }
                lastEvents = events
            }
            return reason
        }
    }
}

import Foundation
import TOMLKit

/// Reads `[persistence]` and its tables (the tiers, the power source, the desktop).
extension StrataConfig {
    static func readPersistence(_ r: inout ConfigReader) throws -> PersistenceConfig {
        var c = PersistenceConfig()
        c.flushInterval = try r.duration("flush_interval_secs", default: c.flushInterval, unit: .seconds)
        c.criticalFlushDelay = try r.duration("critical_flush_delay_ms", default: c.criticalFlushDelay, unit: .milliseconds)
        c.checkpointInterval = try r.duration("checkpoint_interval_secs", default: c.checkpointInterval, unit: .seconds)
        c.maxWalSizeBytes = try r.megabytes("max_wal_size_mb", default: c.maxWalSizeBytes)
        c.batteryAdaptive = try r.bool("battery_adaptive", default: c.batteryAdaptive)
        c.criticalDurability = try r.choice("critical_durability", default: c.criticalDurability)
        c.vectorClockEveryOperations = try r.int("vector_clock_every_operations", default: c.vectorClockEveryOperations, range: 1 ... 1_000_000)
        c.vectorClockInterval = try r.duration("vector_clock_every_secs", default: c.vectorClockInterval, unit: .seconds)
        c.idleAfter = try r.duration("idle_after_secs", default: c.idleAfter, unit: .seconds)
        c.idleFlushInterval = try r.duration("idle_flush_interval_secs", default: c.idleFlushInterval, unit: .seconds)

        if var tiers = try r.table("battery_tiers") {
            c.batteryTiers.charging = try tiers.duration("charging", default: c.batteryTiers.charging, unit: .seconds)
            c.batteryTiers.high = try tiers.duration("high", default: c.batteryTiers.high, unit: .seconds)
            c.batteryTiers.medium = try tiers.duration("medium", default: c.batteryTiers.medium, unit: .seconds)
            c.batteryTiers.low = try tiers.duration("low", default: c.batteryTiers.low, unit: .seconds)
            c.batteryTiers.highAbovePercent = try tiers.number("high_above_percent", default: c.batteryTiers.highAbovePercent, range: 0 ... 100, unit: " percent")
            c.batteryTiers.lowBelowPercent = try tiers.number("low_below_percent", default: c.batteryTiers.lowBelowPercent, range: 0 ... 100, unit: " percent")
            if c.batteryTiers.lowBelowPercent > c.batteryTiers.highAbovePercent {
                throw tiers.error(.invalidValue, "low_below_percent",
                                  "must not be above high_above_percent (\(c.batteryTiers.highAbovePercent)), got \(c.batteryTiers.lowBelowPercent)")
            }
            try tiers.rejectUnknownKeys(known: ["charging", "high", "medium", "low", "high_above_percent", "low_below_percent"])
        }
        if var linux = try r.table("linux") {
            c.lowPowerModeInterval = try linux.duration("low_power_mode_interval_secs", default: c.lowPowerModeInterval, unit: .seconds)
            c.backgroundFlushTimeout = try linux.duration("background_flush_timeout_secs", default: c.backgroundFlushTimeout, unit: .seconds)
            c.power.source = try linux.choice("power_source", default: c.power.source)
            c.power.fallback = try linux.choice("power_fallback", default: c.power.fallback)
            c.power.pollInterval = try linux.duration("power_poll_interval_secs", default: c.power.pollInterval, unit: .seconds)
            c.power.dbusTimeout = try linux.duration("dbus_timeout_ms", default: c.power.dbusTimeout, unit: .milliseconds)
            c.memoryPressurePercent = try linux.number("memory_pressure_percent", default: c.memoryPressurePercent, range: 0 ... 100, unit: " percent")
            c.memoryPollInterval = try linux.duration("memory_poll_interval_secs", default: c.memoryPollInterval, unit: .seconds)
            try linux.rejectUnknownKeys(known: [
                "low_power_mode_interval_secs", "background_flush_timeout_secs", "power_source", "power_fallback",
                "power_poll_interval_secs", "dbus_timeout_ms", "memory_pressure_percent", "memory_poll_interval_secs",
            ])
        }
        if var desktop = try r.table("desktop") {
            c.desktop.flushInterval = try desktop.duration("flush_interval_secs", default: c.desktop.flushInterval, unit: .seconds)
            c.desktop.maxWalSizeBytes = try desktop.megabytes("max_wal_size_mb", default: c.desktop.maxWalSizeBytes)
            try desktop.rejectUnknownKeys(known: ["flush_interval_secs", "max_wal_size_mb"])
        }
        try r.rejectUnknownKeys(known: [
            "flush_interval_secs", "critical_flush_delay_ms", "checkpoint_interval_secs", "max_wal_size_mb",
            "battery_adaptive", "critical_durability", "idle_after_secs", "idle_flush_interval_secs",
            "vector_clock_every_operations", "vector_clock_every_secs", "battery_tiers", "linux", "desktop",
        ])

        // The critical delay must be shorter than every derived interval, or "critical"
        // would mean "later than derived".
        var intervals: [(key: String, interval: Duration)] = [("flush_interval_secs", c.flushInterval)]
        if c.batteryAdaptive {
            intervals += [
                ("battery_tiers.charging", c.batteryTiers.charging), ("battery_tiers.high", c.batteryTiers.high),
                ("battery_tiers.medium", c.batteryTiers.medium), ("battery_tiers.low", c.batteryTiers.low),
                ("linux.low_power_mode_interval_secs", c.lowPowerModeInterval),
                ("desktop.flush_interval_secs", c.desktop.flushInterval),
            ]
        }
        for (key, interval) in intervals where c.criticalFlushDelay >= interval {
            throw r.error(.invalidValue, "critical_flush_delay_ms",
                          "must be below persistence.\(key) (\(interval.seconds) s), got \(Int(c.criticalFlushDelay.milliseconds))")
        }
        return c
    }
}

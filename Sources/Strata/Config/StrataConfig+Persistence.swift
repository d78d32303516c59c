/// `[persistence]`: the specification's keys, plus the Linux keys beside them.
public struct PersistenceConfig: Sendable, Equatable {
    /// `flush_interval_secs`: the derived interval when `battery_adaptive` is false.
    public var flushInterval: Duration = .seconds(10)
    /// `critical_flush_delay_ms`: critical changes are committed within this delay.
    public var criticalFlushDelay: Duration = .milliseconds(1000)
    /// `checkpoint_interval_secs`: PASSIVE checkpoint period.
    public var checkpointInterval: Duration = .seconds(30)
    /// `max_wal_size_mb`: a WAL larger than this is checkpointed at once.
    public var maxWalSizeBytes = 5 * 1024 * 1024
    /// `battery_adaptive`: derive the interval from the power state.
    public var batteryAdaptive = true
    /// `critical_durability`: `"power_loss"` (FULL commits) or `"crash"` (NORMAL).
    public var criticalDurability = CriticalDurability.powerLoss
    /// `idle_after_secs`: no input for longer than this means idle.
    public var idleAfter: Duration = .seconds(60)
    /// `idle_flush_interval_secs`: the derived interval is at least this when idle.
    public var idleFlushInterval: Duration = .seconds(30)
    /// `[persistence.battery_tiers]`.
    public var batteryTiers = BatteryTiers()
    /// `[persistence.linux] low_power_mode_interval_secs`: interval under the power-saver profile.
    public var lowPowerModeInterval: Duration = .seconds(60)
    /// `[persistence.linux] background_flush_timeout_secs`: time allowed for the flush on going to background.
    public var backgroundFlushTimeout: Duration = .seconds(5)
    /// `[persistence.desktop]`: overrides for a machine without a battery.
    public var desktop = DesktopOverrides()
    /// `[persistence.linux]`: where the power state comes from.
    public var power = PowerSourceConfig()
    /// `[persistence.linux] memory_pressure_percent`: PSI `some avg10` above which a
    /// low-memory flush fires (Linux memory pressure, `/proc/pressure/memory`).
    public var memoryPressurePercent = 10.0
    /// `[persistence.linux] memory_poll_interval_secs`: how often memory pressure is read.
    public var memoryPollInterval: Duration = .seconds(2)
    /// `vector_clock_every_operations`: the vector clock is flushed after this many operations…
    public var vectorClockEveryOperations = 5
    /// `vector_clock_every_secs`: …or this long after the first unflushed one, whichever first.
    public var vectorClockInterval: Duration = .seconds(5)

    public init() {}
}

/// Where the power state comes from (`[persistence.linux]`).
public struct PowerSourceConfig: Sendable, Equatable {
    public enum Source: String, Sendable, CaseIterable {
        /// UPower through libupower-glib, and power-profiles-daemon's active profile.
        case upower
        /// Always the fallback: for machines where D-Bus is unwanted.
        case fallback
    }

    /// What the engine assumes when the source is `fallback`, or UPower does not answer.
    public enum Fallback: String, Sendable, CaseIterable {
        case ac, charging
        case batteryHigh = "battery_high"
        case batteryMedium = "battery_medium"
        case batteryLow = "battery_low"
        case powerSaver = "power_saver"

        public var state: PowerState {
            switch self {
            case .ac: .assumedAC
            case .charging: .charging(50)
            case .batteryHigh: .discharging(75)
            case .batteryMedium: .discharging(35)
            case .batteryLow: .discharging(10)
            case .powerSaver: PowerState(batteryPresent: false, onBattery: false, charging: false, percentage: nil, powerSaver: true)
            }
        }
    }

    /// `power_source`.
    public var source = Source.upower
    /// `power_fallback`.
    public var fallback = Fallback.ac
    /// `power_poll_interval_secs`: how often the monitor reads, besides change signals.
    public var pollInterval: Duration = .seconds(30)
    /// `dbus_timeout_ms`: the longest any one D-Bus call may wait.
    public var dbusTimeout: Duration = .milliseconds(500)

    public init() {}
}

/// `[persistence.battery_tiers]`: derived interval per battery state (the specification, *Battery-adaptive flushing*).
public struct BatteryTiers: Sendable, Equatable {
    /// `charging`: charging, or on AC with a battery.
    public var charging: Duration = .seconds(5)
    /// `high`: discharging above 50 %.
    public var high: Duration = .seconds(10)
    /// `medium`: discharging, 20–50 %.
    public var medium: Duration = .seconds(30)
    /// `low`: discharging below 20 %.
    public var low: Duration = .seconds(60)
    /// `high_above_percent`: "high" is strictly above this charge.
    public var highAbovePercent = 50.0
    /// `low_below_percent`: "low" is strictly below this charge; between the two, "medium".
    public var lowBelowPercent = 20.0

    public init() {}
}

/// `[persistence.desktop]`: a machine without a battery: aggressive flushing, larger WAL.
public struct DesktopOverrides: Sendable, Equatable {
    /// `flush_interval_secs`.
    public var flushInterval: Duration = .seconds(5)
    /// `max_wal_size_mb`.
    public var maxWalSizeBytes = 10 * 1024 * 1024

    public init() {}
}

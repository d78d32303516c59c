#if canImport(CStrataPower)
import CStrataPower

/// Reads the power state from UPower (libupower-glib) and power-profiles-daemon.
///
/// A thin Swift face over `strata_power.c`: every D-Bus call is bounded by `timeout`,
/// so a read returns within a few timeouts even when a daemon hangs. When UPower is
/// absent or silent, the reading carries the `fallback` state and the reason; a
/// power-saver profile found without UPower is kept.
///
/// Owned by one thread at a time (the power monitor's, or a command's main thread).
final class UPowerProbe {
    private let probe: OpaquePointer
    private var owner = ThreadOwner()

    init(timeout: Duration) {
        probe = strata_power_probe_new(Int32(clamping: Int(timeout.milliseconds.rounded())))
    }

    deinit { strata_power_probe_free(probe) }

    /// Reads now.
    func read(fallback: PowerState) -> PowerReading {
        owner.check("UPowerProbe")
        var raw = strata_power_reading()
        strata_power_probe_read(probe, &raw)
        let profile = raw.profile_found != 0 ? string(&raw.profile) : nil
        guard raw.status == STRATA_POWER_OK else {
            var state = fallback
            if let profile { state.profile = profile }
            return PowerReading(source: .unavailable(reason: Self.describe(raw.status, string(&raw.message))), state: state)
        }
        let present = raw.battery_present != 0
        var state = PowerState(
            batteryPresent: present,
            onBattery: raw.on_battery != 0,
            charging: present && raw.state == 1,   // UP_DEVICE_STATE_CHARGING
            percentage: present ? raw.percentage : nil,
            powerSaver: false,
            warningLevel: present ? PowerState.WarningLevel(upowerLevel: Int(raw.warning_level)) : .none)
        state.profile = profile
        return PowerReading(source: .upower(daemonVersion: string(&raw.daemon_version)), state: state)
    }

    /// Waits up to `timeout` for a change signal; true if one arrived.
    func waitForChange(timeout: Duration) -> Bool {
        owner.check("UPowerProbe")
        return strata_power_probe_wait(probe, Int32(clamping: Int(timeout.milliseconds.rounded()))) != 0
    }

    private static func describe(_ status: strata_power_status, _ message: String) -> String {
        let what = switch status {
        case STRATA_POWER_NO_BUS: "no system bus"
        case STRATA_POWER_NO_UPOWER: "no UPower daemon"
        case STRATA_POWER_NOT_ANSWERING: "UPower is not answering"
        default: "UPower error"
        }
        return message.isEmpty ? what : "\(what): \(message)"
    }
}

/// A fixed-size C `char` array as a Swift string.
private func string<T>(_ tuple: inout T) -> String {
    withUnsafeBytes(of: &tuple) { bytes in
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
}
#else
import Foundation

/// Where there is no UPower (not Linux): every reading is the fallback, said so.
final class UPowerProbe {
    init(timeout: Duration) {}

    func read(fallback: PowerState) -> PowerReading {
        PowerReading(source: .unavailable(reason: "UPower is Linux's: no power source on this system"), state: fallback)
    }

    func waitForChange(timeout: Duration) -> Bool {
        Thread.sleep(forTimeInterval: timeout.seconds)
        return false
    }
}
#endif

/// The machine's power situation, as the flush policy sees it.
///
/// Read from UPower on Linux (a later issue adds the monitor); until then the engine
/// runs on ``PowerState/assumedAC``, or whatever the host sets on ``Engine/powerState``.
public struct PowerState: Sendable, Equatable, CustomStringConvertible {
    /// Whether the machine has a battery at all (false: a desktop on mains power).
    public var batteryPresent: Bool
    /// Whether the machine runs from its battery now.
    public var onBattery: Bool
    /// Whether the battery is charging.
    public var charging: Bool
    /// Battery charge, 0…100, when known.
    public var percentage: Double?
    /// Whether the power-saver profile (Low Power Mode) is active.
    public var powerSaver: Bool

    public init(batteryPresent: Bool, onBattery: Bool, charging: Bool, percentage: Double?, powerSaver: Bool) {
        self.batteryPresent = batteryPresent
        self.onBattery = onBattery
        self.charging = charging
        self.percentage = percentage
        self.powerSaver = powerSaver
    }

    /// No battery, mains power, no power saver: what the engine assumes when nothing is known.
    public static let assumedAC = PowerState(batteryPresent: false, onBattery: false, charging: false, percentage: nil, powerSaver: false)

    /// A battery-powered machine discharging at `percentage`.
    public static func discharging(_ percentage: Double) -> PowerState {
        PowerState(batteryPresent: true, onBattery: true, charging: false, percentage: percentage, powerSaver: false)
    }

    public var description: String {
        guard batteryPresent else { return powerSaver ? "AC, power-saver" : "AC" }
        let pct = percentage.map { "\(Int($0.rounded()))%" } ?? "?%"
        let state = charging ? "charging" : (onBattery ? "discharging" : "full")
        return "battery \(pct) \(state)" + (powerSaver ? ", power-saver" : "")
    }
}

/// Whether the user is interacting (RFC 0002: idle = no input for more than a minute).
public enum Activity: Sendable, Equatable {
    case active
    case idle
}

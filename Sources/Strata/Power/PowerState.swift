/// The machine's power situation, as the flush policy sees it.
///
/// Read from UPower and power-profiles-daemon by ``PowerMonitor``; when nothing
/// answers, the configured fallback (`[persistence.linux] power_fallback`).
public struct PowerState: Sendable, Equatable, CustomStringConvertible {
    /// Whether the machine has a battery at all (false: a desktop on mains power).
    public var batteryPresent: Bool
    /// Whether the machine runs from its battery now.
    public var onBattery: Bool
    /// Whether the battery is charging.
    public var charging: Bool
    /// Battery charge, 0…100, when known.
    public var percentage: Double?
    /// UPower's warning level of the battery (none, discharging, low, critical, action).
    public var warningLevel: WarningLevel
    /// The active power-profiles-daemon profile, when one answered.
    public var profile: String?

    /// Whether the power-saver profile (Linux's Low Power Mode) is active.
    public var powerSaver: Bool {
        get { profile == "power-saver" }
        set { profile = newValue ? "power-saver" : (profile == "power-saver" ? nil : profile) }
    }

    /// UPower's `WarningLevel` (`UpDeviceLevel`).
    public enum WarningLevel: String, Sendable, Equatable {
        case unknown, none, discharging, low, critical, action

        /// From UPower's numeric `UpDeviceLevel`.
        public init(upowerLevel: Int) {
            self = switch upowerLevel {
            case 1: .none
            case 2: .discharging
            case 3: .low
            case 4: .critical
            case 5: .action
            default: .unknown
            }
        }
    }

    public init(batteryPresent: Bool, onBattery: Bool, charging: Bool, percentage: Double?, powerSaver: Bool,
                warningLevel: WarningLevel = .none) {
        self.batteryPresent = batteryPresent
        self.onBattery = onBattery
        self.charging = charging
        self.percentage = percentage
        self.warningLevel = warningLevel
        self.profile = powerSaver ? "power-saver" : nil
    }

    /// No battery, mains power, no power saver: what the engine assumes when nothing is known.
    public static let assumedAC = PowerState(batteryPresent: false, onBattery: false, charging: false, percentage: nil, powerSaver: false)

    /// A battery-powered machine discharging at `percentage`.
    public static func discharging(_ percentage: Double) -> PowerState {
        PowerState(batteryPresent: true, onBattery: true, charging: false, percentage: percentage, powerSaver: false,
                   warningLevel: .discharging)
    }

    /// A battery-powered machine on its charger at `percentage`.
    public static func charging(_ percentage: Double) -> PowerState {
        PowerState(batteryPresent: true, onBattery: false, charging: true, percentage: percentage, powerSaver: false)
    }

    public var description: String {
        guard batteryPresent else { return powerSaver ? "AC, power-saver" : "AC" }
        let pct = percentage.map { "\(Int($0.rounded()))%" } ?? "?%"
        let state = charging ? "charging" : (onBattery ? "discharging" : "on AC")
        return "battery \(pct) \(state)" + (powerSaver ? ", power-saver" : "")
    }
}

/// Whether the user is interacting (idle = no input for more than a minute).
public enum Activity: Sendable, Equatable {
    case active
    case idle
}

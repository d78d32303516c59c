import Foundation

/// What `strata power` prints: the power state as read now, its source, and the
/// intervals the flush policy would choose with it.
///
/// The JSON form is a stable interface for scripts: snake_case keys, only ever added.
package struct PowerReport: Codable, Sendable, Equatable {
    /// `upower`, `fallback` or `error`.
    package var source: String
    /// The daemon version, or why UPower was not used.
    package var sourceDetail: String
    package var batteryPresent: Bool
    package var onBattery: Bool
    package var charging: Bool
    package var percentage: Double?
    package var warningLevel: String
    package var profile: String?
    package var powerSaver: Bool
    /// The row of the battery table in force (``PowerTier``).
    package var powerTier: String
    package var derivedIntervalSecs: Double
    /// The derived interval once idle (`idle_after_secs` without input).
    package var idleDerivedIntervalSecs: Double
    package var criticalFlushDelayMs: Int
    package var checkpointIntervalSecs: Double
    package var maxWalSizeMb: Double

    package init(reading: PowerReading, policy: FlushPolicy) {
        switch reading.source {
        case .upower(let version): source = "upower"; sourceDetail = "UPower \(version)"
        case .fallback: source = "fallback"; sourceDetail = "power_source = \"fallback\""
        case .unavailable(let reason): source = "error"; sourceDetail = reason
        }
        let state = reading.state
        batteryPresent = state.batteryPresent
        onBattery = state.onBattery
        charging = state.charging
        percentage = state.percentage
        warningLevel = state.warningLevel.rawValue
        profile = state.profile
        powerSaver = state.powerSaver
        powerTier = policy.tier(power: state).rawValue
        derivedIntervalSecs = policy.derivedInterval(power: state, activity: .active).seconds
        idleDerivedIntervalSecs = policy.derivedInterval(power: state, activity: .idle).seconds
        criticalFlushDelayMs = Int(policy.config.criticalFlushDelay.milliseconds.rounded())
        checkpointIntervalSecs = policy.config.checkpointInterval.seconds
        maxWalSizeMb = Double(policy.maxWalBytes(power: state)) / 1_048_576
    }

    private enum CodingKeys: String, CodingKey {
        case source, sourceDetail, batteryPresent, onBattery, charging, percentage, warningLevel, profile, powerSaver,
             powerTier, derivedIntervalSecs, idleDerivedIntervalSecs, criticalFlushDelayMs, checkpointIntervalSecs, maxWalSizeMb
    }

    /// Every key is always present: unknown values are `null`, not missing.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(source, forKey: .source)
        try c.encode(sourceDetail, forKey: .sourceDetail)
        try c.encode(batteryPresent, forKey: .batteryPresent)
        try c.encode(onBattery, forKey: .onBattery)
        try c.encode(charging, forKey: .charging)
        try c.encode(percentage, forKey: .percentage)
        try c.encode(warningLevel, forKey: .warningLevel)
        try c.encode(profile, forKey: .profile)
        try c.encode(powerSaver, forKey: .powerSaver)
        try c.encode(powerTier, forKey: .powerTier)
        try c.encode(derivedIntervalSecs, forKey: .derivedIntervalSecs)
        try c.encode(idleDerivedIntervalSecs, forKey: .idleDerivedIntervalSecs)
        try c.encode(criticalFlushDelayMs, forKey: .criticalFlushDelayMs)
        try c.encode(checkpointIntervalSecs, forKey: .checkpointIntervalSecs)
        try c.encode(maxWalSizeMb, forKey: .maxWalSizeMb)
    }

    package func json(pretty: Bool = true) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    package static func decode(json: String) throws -> PowerReport {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(PowerReport.self, from: Data(json.utf8))
    }

    package var text: String {
        let pct = percentage.map { String(format: "%.1f %%", $0) } ?? "n/a"
        return """
            source              \(source) (\(sourceDetail))
            battery present     \(batteryPresent)
            on battery          \(onBattery)
            charging            \(charging)
            percentage          \(pct)
            warning level       \(warningLevel)
            profile             \(profile ?? "n/a")\(powerSaver ? " (power saver)" : "")
            power tier          \(powerTier)
            derived interval    \(derivedIntervalSecs) s (idle: \(idleDerivedIntervalSecs) s)
            critical delay      \(criticalFlushDelayMs) ms
            checkpoint interval \(checkpointIntervalSecs) s, or when the WAL passes \(maxWalSizeMb) MB
            """
    }
}

extension PowerReading {
    /// Reads the power state once, now, on the calling thread (bounded by `dbus_timeout_ms`).
    /// For a command; an engine uses a ``PowerMonitor``.
    package static func readNow(config: PowerSourceConfig) -> PowerReading {
        guard config.source == .upower else { return PowerReading(source: .fallback, state: config.fallback.state) }
        return UPowerProbe(timeout: config.dbusTimeout).read(fallback: config.fallback.state)
    }
}

import Foundation

/// The document's settings: typed values by key, read from memory, persisted as
/// critical writes (critical, like document metadata).
///
/// Tick thread. Reads come from the copy loaded at open. A change is kept in memory at
/// once and written by the next critical flush: within `critical_flush_delay_ms`, with
/// `synchronous=FULL`, in the same transaction as the critical changes made with it.
/// Changes of one key before that flush coalesce (the last one is written).
///
/// ```swift
/// world.setSetting(.boolean(true), for: "queue.paused")
/// if case .boolean(true)? = world.setting("queue.paused") { … }
/// ```
extension World {
    /// Every setting, by key.
    public var settings: [String: SettingValue] { settingValues }

    /// The setting's value, nil if it is not set.
    public func setting(_ key: String) -> SettingValue? {
        owner.check("World")
        return settingValues[key]
    }

    /// Sets the setting (nil removes it); persisted at the next critical flush.
    public func setSetting(_ value: SettingValue?, for key: String) {
        owner.check("World")
        precondition(!key.isEmpty, "a setting needs a key")
        guard settingValues[key] != value else { return }
        settingValues[key] = value
        pendingSettings.updateValue(value, forKey: key)   // nil kept: a removal to write
        tracker.noteCriticalWork(clock: clock)
    }

    /// Sets the setting to `value`, JSON-encoded with sorted keys (a small `Codable`
    /// value; the same value is always the same text, so setting it again writes nothing).
    public func setSetting<T: Encodable>(encoding value: T, for key: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let data = try encoder.encode(value)
        setSetting(.json(String(decoding: data, as: UTF8.self)), for: key)
    }

    /// The setting decoded from JSON; nil if it is not set. Throws if it is set but is not
    /// a JSON value of `type`.
    public func setting<T: Decodable>(_ key: String, as type: T.Type) throws -> T? {
        guard let value = setting(key) else { return nil }
        guard case .json(let text) = value else {
            throw PayloadError.invalid("setting \(key) is \(value), not a JSON value")
        }
        return try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }

    /// Moves the settings changed since the last critical drain into `batch` (in key order).
    func drainSettings(into batch: WriteBatch) {
        guard !pendingSettings.isEmpty else { return }
        for (key, value) in pendingSettings.sorted(by: { $0.key < $1.key }) {
            batch.settingWrites.append(SettingWrite(key: key, value: value))
        }
        pendingSettings.removeAll()
    }

    /// The settings read at open (nothing to write).
    func loadSettings(_ values: [String: SettingValue]) {
        settingValues = values
    }
}

/// One setting write of a batch: the new value, or nil for a removal.
struct SettingWrite: Sendable, Equatable {
    var key: String
    var value: SettingValue?
}

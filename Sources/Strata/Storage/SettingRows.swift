import GRDB

/// The document's settings, a row per key in `settings` (key, tagged text: see
/// ``SettingValue``). Written with the batch's critical work; a removal deletes the row.
/// Writer thread.
final class SettingRowsPart: BatchPart {
    let sections: [BatchSection] = [.settings]

    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        guard !batch.settingWrites.isEmpty else { return }
        for write in batch.settingWrites {
            if let value = write.value {
                try executeChecked(db, "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                   [.text(write.key), .text(value.storageText)])
            } else {
                try executeChecked(db, "DELETE FROM settings WHERE key = ?", [.text(write.key)])
            }
        }
        counts.settingWrites += batch.settingWrites.count
    }

    func didCommit() {}
    func didRollBack() {}
}

extension Store {
    /// Every setting in the file, with the keys whose text this build cannot read
    /// (kept in the file untouched, left out of the world).
    static func readSettings(_ db: Database) throws -> (values: [String: SettingValue], unreadable: [String]) {
        var values: [String: SettingValue] = [:]
        var unreadable: [String] = []
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM settings") {
            // A key that is not text cannot be a setting's: left in the file, out of the world.
            guard let key = try? row.decode(String.self, forColumn: "key") else {
                unreadable.append("(a key that is not text)")
                continue
            }
            if let text = try? row.decode(String.self, forColumn: "value"), let value = SettingValue(storageText: text) {
                values[key] = value
            } else {
                unreadable.append(key)
            }
        }
        return (values, unreadable)
    }
}

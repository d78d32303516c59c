import Foundation
import GRDB

/// What a reconciliation did, file by file.
public struct ReconcileReport: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Rows whose file is not in the folder: marked `missing`.
    public var missing: [String] = []
    /// Rows marked missing whose file is back: `present` again.
    public var foundAgain: [String] = []
    /// Files without a row, registered without an owner (`unknown_files = "adopt"`).
    public var adopted: [String] = []
    /// Files without a row, moved to `PATH.assets/quarantine/` (`unknown_files = "quarantine"`).
    public var quarantined: [String] = []
    /// Files dropped in `PATH.assets/inbox/`, moved in under a new name and registered: inbox name → new name.
    public var imported: [String: String] = [:]
    /// Files under `min_file_bytes`, removed with their rows.
    public var removedSmall: [String] = []
    /// Files of despawned entities removed (their rows had gone), and temporary files of
    /// writes a crash interrupted.
    public var trashEmptied = 0
    public var temporaryRemoved = 0

    public var isEmpty: Bool { self == ReconcileReport() }

    public var description: String {
        var parts: [String] = []
        if !missing.isEmpty { parts.append("\(missing.count) missing") }
        if !foundAgain.isEmpty { parts.append("\(foundAgain.count) found again") }
        if !adopted.isEmpty { parts.append("\(adopted.count) adopted") }
        if !quarantined.isEmpty { parts.append("\(quarantined.count) quarantined") }
        if !imported.isEmpty { parts.append("\(imported.count) imported from the inbox") }
        if !removedSmall.isEmpty { parts.append("\(removedSmall.count) under the minimum size removed") }
        if trashEmptied > 0 { parts.append("\(trashEmptied) files of despawned entities removed") }
        if temporaryRemoved > 0 { parts.append("\(temporaryRemoved) interrupted writes removed") }
        return parts.isEmpty ? "assets in step with their rows" : "assets: " + parts.joined(separator: ", ")
    }
}

/// The folder and the rows brought back in step (docs/specification.md, *Assets*). At
/// open (``Engine/open(config:components:logger:options:)``) and on demand.
extension AssetStore {
    /// Reconciles the assets folder with the `assets` rows:
    ///
    /// 1. files of despawned entities (`asset_trash`) and interrupted writes (`.tmp-*`) go;
    /// 2. a row whose file is gone is marked `missing` (and `present` again if it is back);
    /// 3. a file without a row is adopted or quarantined (`[assets] unknown_files`);
    /// 4. files in `PATH.assets/inbox/` are moved in under new UUID names (keeping their
    ///    extension) and registered without an owner (a file another program dropped in the folder);
    /// 5. files under `[assets] min_file_bytes` are removed, rows and all.
    public func reconcile() throws -> ReconcileReport {
        var report = ReconcileReport()
        let fm = FileManager.default
        report.trashEmptied = emptyTrash()
        let rows = try assets()
        let known = Set(rows.map(\.name))
        var files: [String: Int] = [:]   // name → size
        for name in (try? fm.contentsOfDirectory(atPath: folder.path)) ?? [] {
            let url = folder.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            if name.hasPrefix(".tmp-") {
                try? fm.removeItem(at: url)
                report.temporaryRemoved += 1
                continue
            }
            files[name] = ((try? fm.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
        }
        let now = wallClock()
        var small: [String] = []
        for row in rows {
            if files[row.name] == nil {
                if row.state == .present { report.missing.append(row.name) }
            } else {
                if row.state == .missing { report.foundAgain.append(row.name) }
                if config.minFileBytes > 0 && (files[row.name] ?? 0) < config.minFileBytes { small.append(row.name) }
            }
        }
        let (missing, found) = (report.missing, report.foundAgain)
        if !missing.isEmpty || !found.isEmpty || !small.isEmpty {
            _ = try lane.perform(.normal) { db -> Bool in
                for name in missing { try db.execute(sql: "UPDATE assets SET state = 'missing' WHERE name = ?", arguments: [name]) }
                for name in found { try db.execute(sql: "UPDATE assets SET state = 'present' WHERE name = ?", arguments: [name]) }
                for name in small { try db.execute(sql: "DELETE FROM assets WHERE name = ?", arguments: [name]) }
                return true
            }
        }
        report.removedSmall = small
        if !small.isEmpty { report.trashEmptied += emptyTrash() - small.count }

        // Files nobody registered.
        for (name, size) in files.sorted(by: { $0.key < $1.key }) where !known.contains(name) {
            let url = folder.appendingPathComponent(name)
            if config.minFileBytes > 0 && size < config.minFileBytes {
                try? fm.removeItem(at: url)
                report.removedSmall.append(name)
                continue
            }
            switch config.unknownFiles {
            case .adopt:
                try register(url, name: name, now: now)
                report.adopted.append(name)
            case .quarantine:
                try fm.createDirectory(atPath: location.assetsQuarantinePath, withIntermediateDirectories: true)
                var target = URL(fileURLWithPath: location.assetsQuarantinePath).appendingPathComponent(name)
                if fm.fileExists(atPath: target.path) { target = target.deletingLastPathComponent().appendingPathComponent("\(name).\(now)") }
                try fm.moveItem(at: url, to: target)
                report.quarantined.append(name)
            }
        }

        // The inbox.
        let inbox = URL(fileURLWithPath: location.assetsInboxPath)
        for name in ((try? fm.contentsOfDirectory(atPath: inbox.path)) ?? []).sorted() where !name.hasPrefix(".") {
            let url = inbox.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let size = ((try? fm.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
            if config.minFileBytes > 0 && size < config.minFileBytes {
                try? fm.removeItem(at: url)
                report.removedSmall.append("inbox/\(name)")
                continue
            }
            let suffix = URL(fileURLWithPath: name).pathExtension
            let newName = UUID().uuidString.lowercased() + (suffix.isEmpty ? "" : ".\(suffix)")
            let target = folder.appendingPathComponent(newName)
            try fm.createDirectory(at: folder, withIntermediateDirectories: true)
            try fm.moveItem(at: url, to: target)
            DurableFile.syncFolder(folder.path)
            try register(target, name: newName, now: now)
            report.imported[name] = newName
        }
        if !report.isEmpty { logger.notice("\(report)") }
        return report
    }

    /// Registers a file already in the folder, without an owner.
    private func register(_ url: URL, name: String, now: Int64) throws {
        let bytes = [UInt8](try Data(contentsOf: url))
        let checksum = CRC32C.checksum(bytes)
        _ = try lane.perform(.normal) { db in
            try AssetRows.register(db, name: name, entity: nil, size: bytes.count, checksum: checksum, now: now)
        }
    }
}

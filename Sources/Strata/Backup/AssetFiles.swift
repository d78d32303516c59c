import Foundation
import GRDB

/// A document's asset files put beside a copy of it: hard links where the file system
/// allows (an asset file is never written in place, only replaced by a rename, so a link
/// keeps the bytes the copy's row describes), copies where it does not. Any thread.
enum AssetFiles {
    struct Outcome: Sendable, Equatable {
        var linked = 0
        var copied = 0
        /// Names listed but not found in the source folder.
        var missing: [String] = []
    }

    /// The names of the files a document's rows say are present.
    static func present(_ db: Database) throws -> [String] {
        guard try db.tableExists("assets") else { return [] }
        return try String.fetchAll(db, sql: "SELECT name FROM assets WHERE state = 'present' ORDER BY name")
    }

    /// Links (or copies) each of `names` from the folder `from` into the folder `to`
    /// (made if needed), then syncs what it copied and the folder.
    static func place(_ names: [String], from: String, to: String) throws -> Outcome {
        var outcome = Outcome()
        guard !names.isEmpty else { return outcome }
        try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
        for name in names {
            let source = from + "/" + name, destination = to + "/" + name
            if link(source, destination) == 0 {
                outcome.linked += 1
                continue
            }
            switch errno {
            case ENOENT:
                outcome.missing.append(name)
            case EXDEV, EPERM, EMLINK, ENOTSUP:
                try copy(source, to: destination)
                outcome.copied += 1
            default:
                throw StoreError(.write, message: "cannot link the asset \(name): \(String(cString: strerror(errno)))", path: destination)
            }
        }
        DurableFile.syncFolder(to)
        return outcome
    }

    /// A copy of one file, synced.
    static func copy(_ source: String, to destination: String) throws {
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        } catch {
            throw StoreError(.write, message: "cannot read the asset \(source): \(BackupTarget.reason(error))", path: destination)
        }
        try AssetStore.writeDurably(bytes, to: URL(fileURLWithPath: destination))
    }
}

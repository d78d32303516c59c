import Foundation
import GRDB

extension Backup {
    /// Backs up the document at `source` from outside the process that owns it (or while
    /// nobody does): `strata backup`. The pages are copied in one step, under one read
    /// transaction of a connection of its own, so the copy is the document as of one
    /// commit; in WAL mode the owner's writer is not held up (its checkpoints cannot go
    /// past the copy's snapshot until it is done). Then the assets, the check and the name,
    /// as for a backup the engine makes. Nothing is written to the source.
    ///
    /// - Throws: if `source` is not a Strata document, or `destination` cannot be a backup of it
    ///   (``Engine/startBackup(to:completion:)`` says when); the copy's or the check's error.
    public static func copy(from source: String, to destination: String) throws -> BackupReport {
        let location = StoreLocation(path: source)
        guard FileManager.default.fileExists(atPath: location.path) else {
            throw StoreError(.open, message: "no such file", path: location.path)
        }
        let target = try BackupTarget(source: location, destination: destination)
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        var configuration = Configuration()
        configuration.label = "strata.backup.source"
        do {
            let queue = try DatabaseQueue(path: location.path, configuration: configuration)
            defer { try? queue.close() }
            let staged = try queue.writeWithoutTransaction { db -> StagedBackup in
                switch try DocumentKind.classify(db) {
                case .strata, .newerSchema: break
                case .empty: throw StoreError(.foreign, message: "the file is empty, not a Strata document", path: location.path)
                case .foreign(let why): throw StoreError(.foreign, message: "not a Strata document: \(why)", path: location.path)
                }
                let copy = try BackupCopy(from: db, to: target.staging.path)
                defer { copy.close() }
                // One read transaction for the pages and the list of assets: both as of one commit
                // (it is open before the copy's first read, so the copy does not end it).
                var staged: StagedBackup?
                try db.inTransaction(.deferred) {
                    _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
                    try copy.copyAll()
                    let assets = try AssetFiles.place(try AssetFiles.present(db), from: location.assetsPath,
                                                      to: target.staging.assetsPath)
                    let parked = FileManager.default.fileExists(atPath: location.rejectedPath)
                    if parked { try AssetFiles.copy(location.rejectedPath, to: target.staging.rejectedPath) }
                    staged = StagedBackup(target: target, pages: copy.pageCount, steps: copy.steps, longestStep: copy.longestStep,
                                          copyTime: stopwatch.now().duration(since: started), assets: assets, parkedRowsCopied: parked)
                    return .commit
                }
                guard let staged else { throw StoreError(.write, message: "the copy did not finish", path: target.final.path) }
                return staged
            }
            return try staged.finish()
        } catch {
            target.discardStaging()
            throw error
        }
    }
}

import Foundation
import GRDB

extension Backup {
    /// Backs up the document at `source` from outside the process that owns it (or while
    /// nobody does): `strata backup`. Then the assets, the check and the name, as for a
    /// backup the engine makes. Nothing is written to the source.
    ///
    /// - Nobody has it open: its owner lock is taken for the copy (no engine can open it
    ///   meanwhile) and the file and its WAL are copied as they are (`sendfile(2)`); the
    ///   check's open folds the WAL into the copy.
    /// - An engine has it open: the pages are copied in one step, under one read transaction
    ///   of a connection of its own, so the copy is the document as of one commit; in WAL
    ///   mode the owner's writer is not held up (its checkpoints cannot go past the copy's
    ///   snapshot until it is done).
    ///
    /// - Throws: if `source` is not a Strata document, or `destination` cannot be a backup of it
    ///   (``Engine/startBackup(to:completion:)`` says when); the copy's or the check's error.
    public static func copy(from source: String, to destination: String) throws -> BackupReport {
        let location = StoreLocation(path: source)
        guard FileManager.default.fileExists(atPath: location.path) else {
            throw StoreError(.open, message: "no such file", path: location.path)
        }
        let target = try BackupTarget(source: location, destination: destination)
        if let lock = try? DocumentLock.acquire(for: location) {
            defer { lock.release() }
            return try copyIdle(location, to: target)
        }
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

    /// A document nobody has open (its lock held by the caller): its file and WAL copied.
    private static func copyIdle(_ location: StoreLocation, to target: BackupTarget) throws -> BackupReport {
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        do {
            // What it is and which files it lists, read first: the copy is of the same bytes.
            let (pageSize, assetNames) = try location.readExisting { db in
                (try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 1024, try AssetFiles.present(db))
            }
            var steps = 0
            for (from, to) in [(location.path, target.staging.path), (location.walPath, target.staging.walPath)]
            where from == location.path || StagedBackup.size(from) > 0 {
                let file = try FileCopy(from: from, to: to)
                defer { file.close() }
                while try !file.step(bytes: 64 << 20) {}
                steps += file.steps
            }
            let assets = try AssetFiles.place(assetNames, from: location.assetsPath, to: target.staging.assetsPath)
            let parked = FileManager.default.fileExists(atPath: location.rejectedPath)
            if parked { try AssetFiles.copy(location.rejectedPath, to: target.staging.rejectedPath) }
            let staged = StagedBackup(target: target, pages: StagedBackup.size(location.path) / max(pageSize, 512), steps: steps,
                                      longestStep: .zero, copyTime: stopwatch.now().duration(since: started), assets: assets,
                                      parkedRowsCopied: parked)
            return try staged.finish()
        } catch {
            target.discardStaging()
            throw error
        }
    }
}

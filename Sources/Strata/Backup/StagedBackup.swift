import Foundation
import GRDB

/// A copy whose pages and assets are all in its temporary place (``BackupTarget/staging``),
/// not yet verified. ``finish(wallClock:)`` makes it a backup. Any thread but the writer's:
/// the check reads the whole copy.
struct StagedBackup: Sendable {
    let target: BackupTarget
    var pages: Int
    var steps: Int
    var longestStep: Duration
    var copyTime: Duration
    var assets: AssetFiles.Outcome
    var parkedRowsCopied: Bool

    /// Marks the copy clean, checks it whole (`PRAGMA integrity_check`), syncs it, and
    /// gives it its final name (``name(verified:)``). On any failure the temporary files
    /// are removed and nothing is left under the final name.
    func finish(wallClock: @Sendable () -> Int64 = { unixMilliseconds() }) throws -> BackupReport {
        try name(verified: verify(wallClock: wallClock))
    }

    /// What ``verify(wallClock:)`` found and how long it took.
    struct Verified {
        var integrity: String
        var started: Instant
    }

    /// Checks the copy and marks it clean; removes it if the check fails.
    func verify(wallClock: @Sendable () -> Int64 = { unixMilliseconds() }) throws -> Verified {
        let started = MonotonicClock().now()
        do {
            let integrity = try Self.verifyAndMarkClean(target.staging.path, now: wallClock())
            guard integrity == "ok" else {
                throw StoreError(.corrupt, message: "the copy failed its integrity check (\(integrity))", path: target.final.path)
            }
            try Self.sync(target.staging.path)
            return Verified(integrity: integrity, started: started)
        } catch {
            target.discardStaging()
            throw error
        }
    }

    /// Gives the verified copy its final name: assets first, then parked rows, the
    /// database last (its presence says the backup is complete), with `link(2)`, which
    /// never replaces a file. On failure, nothing is left under the final names.
    func name(verified: Verified) throws -> BackupReport {
        let (staging, final) = (target.staging, target.final)
        var moved: [String] = []
        do {
            if FileManager.default.fileExists(atPath: staging.assetsPath) {
                try Self.rename(staging.assetsPath, to: final.assetsPath)
                moved.append(final.assetsPath)
            }
            if parkedRowsCopied {
                try Self.rename(staging.rejectedPath, to: final.rejectedPath)
                moved.append(final.rejectedPath)
            }
            guard link(staging.path, final.path) == 0 else {
                throw StoreError(.write, message: "cannot name the backup \(final.path): \(String(cString: strerror(errno)))", path: final.path)
            }
            unlink(staging.path)
            DurableFile.syncFolder(of: final.path)
            return BackupReport(source: target.source.path, destination: final.path, bytes: Self.size(final.path),
                                pages: pages, steps: steps, longestStepMilliseconds: longestStep.milliseconds,
                                copySeconds: copyTime.seconds,
                                verifySeconds: MonotonicClock().now().duration(since: verified.started).seconds,
                                integrity: verified.integrity, assetsLinked: assets.linked, assetsCopied: assets.copied,
                                assetsMissing: assets.missing, parkedRowsCopied: parkedRowsCopied)
        } catch {
            target.discardStaging()
            // What was renamed before the failure goes: the final names hold nothing half made.
            for path in moved { try? FileManager.default.removeItem(atPath: path) }
            throw error
        }
    }

    /// Runs `integrity_check` on the copy and, when it is "ok", sets its clean mark (the copy
    /// is whole as of a commit: its next open is not a crash), then folds its WAL back and
    /// closes it, so that it is one file. Returns the check's verdict.
    static func verifyAndMarkClean(_ path: String, now: Int64) throws -> String {
        var configuration = Configuration()
        configuration.label = "strata.backup"
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let verdict = try queue.writeWithoutTransaction { db -> String in
            // Read through a map: the check reads every page once (−16 % time at 1M entities).
            try db.execute(sql: "PRAGMA mmap_size = \(min(size(path), 1 << 31))")
            let problems = try String.fetchAll(db, sql: "PRAGMA integrity_check(10)")
            guard problems == ["ok"] else { return problems.joined(separator: "; ") }
            try db.execute(sql: "UPDATE session_state SET clean_shutdown = 1, ended_at = coalesce(ended_at, ?) WHERE id = 1",
                           arguments: [now])
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            return "ok"
        }
        try queue.close()
        for side in [path + "-wal", path + "-shm"] { unlink(side) }
        return verdict
    }

    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0, fsync(fd) == 0 else {
            let error = StoreError(.write, message: "cannot sync the copy: \(String(cString: strerror(errno)))", path: path)
            if fd >= 0 { close(fd) }
            throw error
        }
        close(fd)
    }

    static func rename(_ from: String, to: String) throws {
        guard !FileManager.default.fileExists(atPath: to) else {
            throw StoreError(.write, message: "\(to) exists (a backup never replaces a file)", path: to)
        }
        guard Glibc.rename(from, to) == 0 else {
            throw StoreError(.write, message: "cannot rename \(from) to \(to): \(String(cString: strerror(errno)))", path: to)
        }
    }

    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}

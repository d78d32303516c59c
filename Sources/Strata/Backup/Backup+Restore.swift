import Foundation
import GRDB

/// What a restore did.
public struct RestoreReport: Sendable, Codable, Equatable, CustomStringConvertible {
    public var backup: String
    public var destination: String
    /// Where the document that was at the destination went (nil: there was none).
    public var setAside: String?
    /// The restored document's new node id (its operations cannot collide with those the
    /// original logged after the backup).
    public var node: String
    public var bytes: Int
    public var assetsLinked: Int
    public var assetsCopied: Int

    public var description: String {
        var text = "restored \(backup) to \(destination) (\(bytes) bytes, verified; new node \(node))"
        if assetsLinked + assetsCopied > 0 { text += "; \(assetsLinked + assetsCopied) asset files" }
        if let setAside { text += "; the document that was there is set aside as \(setAside)" }
        return text
    }
}

extension Backup {
    /// Puts the backup at `backup` back as the document at `destination` (`strata restore`).
    ///
    /// - The backup must be a Strata document this build reads, whole (`integrity_check`);
    ///   it is copied, never moved: it stays a backup.
    /// - The destination must not be open (its owner lock is taken for the restore). A
    ///   document there is refused unless `replacing`; then it is set aside whole (with its
    ///   WAL, assets and parked rows) as `DEST.before-restore-TIME`, never deleted.
    /// - The restored document gets a new node id: the original may have logged and pushed
    ///   operations after the backup was made, with the sequence numbers the restored
    ///   document would use next.
    public static func restore(from backup: String, to destination: String, replacing: Bool = false) throws -> RestoreReport {
        let source = StoreLocation(path: backup)
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw StoreError(.open, message: "no such backup", path: source.path)
        }
        let final = StoreLocation(path: destination)
        // A backup that does not pass quick_check is refused before anything is made at DEST
        // (read-only: the backup stays as it is, WAL and all).
        if let damage = Engine.quickCheck(source) {
            throw StoreError(.corrupt, sqliteCode: damage.sqliteCode,
                             message: "the backup is damaged (\(damage.message)): nothing was restored, \(final.path) is as it was",
                             path: source.path)
        }
        let lockPath = DocumentLock.path(for: final)
        let lockExisted = FileManager.default.fileExists(atPath: lockPath)
        let lock = try DocumentLock.acquire(for: final)
        var restored = false
        defer {
            // A restore to a new name that failed leaves nothing there, its lock file neither
            // (removed while held: no other owner can have waited on a name that held nothing).
            if !restored && !lockExisted && !FileManager.default.fileExists(atPath: final.path) { unlink(lockPath) }
            lock.release()
        }
        let occupied = [final.path, final.walPath, final.assetsPath, final.rejectedPath].filter { FileManager.default.fileExists(atPath: $0) }
        if !occupied.isEmpty && !replacing {
            throw StoreError(.write, message: "\(occupied[0]) exists; restore with --replace (replacing: true) to set it aside first",
                             path: final.path)
        }
        let target = try BackupTarget(source: source, destination: final.path, replacing: true)
        let staged = try stage(source, into: target)
        let node = NodeID()
        do {
            let queue = try DatabaseQueue(path: target.staging.path)
            try queue.write { db in
                // The backup's own operations become another node's: the new node starts its
                // sequence at 1, and peers still know the old one's.
                if try db.tableExists("local_operations") {
                    // A backup of schema 17 on stores Strata's kinds as codes and no `logged_at`.
                    let columns = Set(try db.columns(in: "local_operations").map(\.name))
                    let loggedAt = columns.contains("logged_at") ? "logged_at" : "timestamp >> 16"
                    // Schema 21 on leaves out ids made from the sequence and types' names: given back whole.
                    let node = EntityIDColumn.nodeSQL
                    let id = columns.contains("type") ? "coalesce(id, \(StoredOperation.idSQL(node: node, seq: "seq")))" : "id"
                    let payload = StoredOperation.payloadSQL(columns: columns)
                    try db.execute(sql: """
                        INSERT INTO received_operations (node, seq, id, timestamp, kind, payload, logged_at)
                            SELECT \(node), seq, \(id), timestamp, \(OperationKindCode.decodeSQL("kind")),
                                   \(payload), \(loggedAt)
                            FROM local_operations ORDER BY seq;
                        DELETE FROM local_operations;
                        """)
                }
                if try db.tableExists("replica") {
                    // Entity ids made from the old node (schema 23) are written out: the new one would make others.
                    if try db.tableExists("entities") {
                        let id = EntityIDColumn.derivedSQL(node: EntityIDColumn.nodeSQL, number: "num")
                        try db.execute(sql: "UPDATE entities SET id = \(id) WHERE id IS NULL")
                    }
                    try db.execute(sql: "UPDATE replica SET node_id = ? WHERE id = 1", arguments: [node.withBytes { Data($0) }])
                }
                // The outbox's place and refusals were the old node's sequences: the new node
                // pushes its own from 1 (and its first operation must not count as pushed).
                if try db.tableExists("sync_state") {
                    try db.execute(sql: "UPDATE sync_state SET pushed_through = 0; DELETE FROM sync_failures")
                }
            }
            try queue.close()
        } catch {
            target.discardStaging()
            throw StoreError(.write, wrapping: error, path: final.path)
        }
        let verified = try staged.verify()
        let aside = occupied.isEmpty ? nil : try setAside(final, at: unixMilliseconds())
        do {
            let report = try staged.name(verified: verified)
            restored = true
            return RestoreReport(backup: source.path, destination: final.path, setAside: aside?.path, node: node.description,
                                 bytes: report.bytes, assetsLinked: report.assetsLinked, assetsCopied: report.assetsCopied)
        } catch {
            if let aside { try? putBack(aside, as: final) }
            throw error
        }
    }

    /// The backup's pages, assets and parked rows at the target's temporary name.
    private static func stage(_ source: StoreLocation, into target: BackupTarget) throws -> StagedBackup {
        // Read-only: a read-write connection's close would checkpoint the backup's WAL into it
        // and delete the WAL, changing the file a restore promises to leave as it is.
        let before = source.companions
        defer { source.removeCompanionsMadeByReading(before: before) }
        do {
            let queue = try source.readOnlyQueue()
            defer { try? queue.close() }
            return try queue.inDatabase { db in
                guard try DocumentKind.classify(db) == .strata else {
                    throw StoreError(.foreign, message: "not a Strata document this build can open: \(try DocumentKind.classify(db))",
                                     path: source.path)
                }
                let copy = try BackupCopy(from: db, to: target.staging.path)
                defer { copy.close() }
                try copy.copyAll()
                let assets = try AssetFiles.place(try AssetFiles.present(db), from: source.assetsPath, to: target.staging.assetsPath)
                let parked = FileManager.default.fileExists(atPath: source.rejectedPath)
                if parked { try AssetFiles.copy(source.rejectedPath, to: target.staging.rejectedPath) }
                return StagedBackup(target: target, pages: copy.pageCount, steps: copy.steps, longestStep: copy.longestStep,
                                    copyTime: .zero, assets: assets, parkedRowsCopied: parked)
            }
        } catch {
            target.discardStaging()
            throw error
        }
    }

    /// Moves the document at `location` (with its WAL, shared memory, assets and parked
    /// rows) to `PATH.before-restore-TIME`. Returns where.
    private static func setAside(_ location: StoreLocation, at time: Int64) throws -> StoreLocation {
        let aside = StoreLocation(path: location.path + ".before-restore-" + BackupFolder.stamp(time))
        try move(location, to: aside)
        return aside
    }

    private static func putBack(_ aside: StoreLocation, as location: StoreLocation) throws {
        try move(aside, to: location)
    }

    private static func move(_ from: StoreLocation, to: StoreLocation) throws {
        for (a, b) in [(from.walPath, to.walPath), (from.shmPath, to.shmPath), (from.assetsPath, to.assetsPath),
                       (from.rejectedPath, to.rejectedPath), (from.path, to.path)] where FileManager.default.fileExists(atPath: a) {
            try StagedBackup.rename(a, to: b)
        }
        DurableFile.syncFolder(of: to.path)
    }
}

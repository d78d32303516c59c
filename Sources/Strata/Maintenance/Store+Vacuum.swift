import Foundation
import GRDB

extension Store {
    /// What a full VACUUM did (``vacuum(path:)``).
    public struct VacuumResult: Codable, Sendable {
        public var bytesBefore: Int
        public var bytesAfter: Int
        public var autoVacuumBefore: String
        public var autoVacuumAfter: String
    }

    /// Rewrites the document at `path` with `auto_vacuum = INCREMENTAL` (a full `VACUUM`):
    /// every free page is returned, and from then on the engine returns them step by step.
    /// For files made before Strata set the mode (`strata maintain --vacuum`).
    ///
    /// Takes the document's owner lock first (an open document is refused with
    /// ``StoreError`` `.locked`), needs about the file's size in free disk space, and
    /// writes about as much. The file is a Strata document or is refused unchanged.
    public static func vacuum(path: String) throws -> VacuumResult {
        let location = StoreLocation(path: path)
        guard FileManager.default.fileExists(atPath: path) else { throw StoreError(.open, message: "no database file", path: path) }
        let lock = try DocumentLock.acquire(for: location)
        defer { lock.release() }
        do {
            let queue = try DatabaseQueue(path: location.uri)
            defer { try? queue.close() }
            return try queue.writeWithoutTransaction { db in
                try DocumentKind.classify(db).requireWritable(path: path)
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0
                let before = try MaintenanceSteps.fileStats(db)
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                let after = try MaintenanceSteps.fileStats(db)
                return VacuumResult(bytesBefore: before.pages * pageSize, bytesAfter: after.pages * pageSize,
                                    autoVacuumBefore: before.autoVacuumName, autoVacuumAfter: after.autoVacuumName)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.write, wrapping: error, path: path)
        }
    }
}

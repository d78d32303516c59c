import Foundation
import GRDB

/// A document's jobs as `strata jobs` lists them, read without opening the document
/// (a read-only connection: no owner lock, nothing written).
package struct JobListing: Sendable, Codable {
    public var paused: Bool
    /// Jobs in each status (`Job.Status` raw values).
    public var counts: [String: Int]
    public var jobs: [Job]

    /// Reads the jobs of the document at `path`, oldest first, at most `limit`.
    public static func read(path: String, status: Job.Status? = nil, limit: Int = 1000) throws -> JobListing {
        try StoreLocation(path: path).readExisting { db in
            guard try db.tableExists("jobs") else { return JobListing(paused: false, counts: [:], jobs: []) }
            let paused = try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [Engine.jobsPausedKey])
                .flatMap(SettingValue.init(storageText:)) == .boolean(true)
            let counts = Dictionary(uniqueKeysWithValues: try JobRows.counts(db).map { ($0.key.rawValue, $0.value) })
            let jobs = try status.map { try JobRows.fetch(db, where: "jobs.status = ?", [$0.rawValue], limit: limit) }
                ?? JobRows.fetch(db, where: "1", limit: limit)
            return JobListing(paused: paused, counts: counts, jobs: jobs)
        }
    }
}

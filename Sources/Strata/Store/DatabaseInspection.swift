import Foundation
import GRDB

/// What `strata inspect` reports about a database file, read without changing it.
///
/// The JSON form (`--json`) is a stable interface for scripts: keys are snake_case
/// and are only ever added, never renamed.
public struct DatabaseInspection: Codable, Sendable, Equatable {
    public var path: String
    public var journalMode: String
    public var pageSize: Int
    public var schemaVersion: Int
    /// Size of the `-wal` file when inspected (0: absent or truncated).
    public var walBytes: Int
    public var entityCount: Int
    /// Component rows per type name, including types no build registers.
    public var components: [String: Int]
    /// The clean-shutdown mark: nil if the file has no session row.
    public var cleanShutdown: Bool?
    public var crashCount: Int
    public var cleanShutdownCount: Int
    public var sessionID: String?
    /// Unix milliseconds.
    public var sessionStartedAt: Int64?
    public var sessionEndedAt: Int64?

    /// Reads `path` through a read-only connection (no checkpoint, no recovery writes).
    public static func inspect(path: String) throws -> DatabaseInspection {
        let location = StoreLocation(path: path)
        guard FileManager.default.fileExists(atPath: location.path) else {
            throw StoreError(.open, message: "no database file", path: location.path)
        }
        let walBytes = location.walBytes
        var configuration = Configuration()
        configuration.readonly = true
        do {
            let queue = try DatabaseQueue(path: location.uri, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                var components: [String: Int] = [:]
                var entityCount = 0
                if try db.tableExists("components") && db.tableExists("component_types") {
                    for row in try Row.fetchAll(db, sql: """
                        SELECT coalesce(t.name, '#' || c.type_id) AS name, count(*) AS n
                        FROM components c LEFT JOIN component_types t ON t.id = c.type_id GROUP BY c.type_id
                        """) {
                        components[row["name"]] = row["n"]
                    }
                }
                if try db.tableExists("entities") {
                    entityCount = try Int.fetchOne(db, sql: "SELECT count(*) FROM entities") ?? 0
                }
                var inspection = DatabaseInspection(
                    path: location.path,
                    journalMode: try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "unknown",
                    pageSize: try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0,
                    schemaVersion: try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0,
                    walBytes: walBytes, entityCount: entityCount, components: components,
                    cleanShutdown: nil, crashCount: 0, cleanShutdownCount: 0)
                if try db.tableExists("session_state"),
                   let row = try Row.fetchOne(db, sql: "SELECT * FROM session_state WHERE id = 1") {
                    inspection.cleanShutdown = (row["clean_shutdown"] as Int) == 1
                    inspection.crashCount = row["crash_count"]
                    inspection.cleanShutdownCount = row["clean_shutdown_count"]
                    inspection.sessionID = (row["session_id"] as Data?).flatMap { data in
                        data.withUnsafeBytes { EntityID(bytes: $0)?.description }
                    }
                    inspection.sessionStartedAt = row["started_at"]
                    inspection.sessionEndedAt = row["ended_at"]
                }
                return inspection
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
    }

    /// The JSON form, keys sorted.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    /// The human form.
    public var text: String {
        var lines = [
            "database         \(path)",
            "journal mode     \(journalMode)",
            "page size        \(pageSize)",
            "schema version   \(schemaVersion)",
            "WAL              \(walBytes) bytes",
            "entities         \(entityCount)",
        ]
        for (name, count) in components.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(count)")
        }
        let mark = cleanShutdown.map { $0 ? "set (last session shut down cleanly)" : "not set (running, or crashed)" } ?? "absent"
        lines.append("clean shutdown   \(mark)")
        lines.append("crashes          \(crashCount)")
        lines.append("clean shutdowns  \(cleanShutdownCount)")
        return lines.joined(separator: "\n")
    }
}

import Foundation
import GRDB

/// A file beside the document (a recording, a thumbnail), in `PATH.assets/`, with its
/// row in the document's `assets` table.
public struct Asset: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable {
        case present
        /// The row's file was not in the folder at the last reconciliation.
        case missing
    }

    public var id: Int64
    /// The owning entity; nil for a file adopted or imported without one.
    public var entity: EntityID?
    /// The file's name in the assets folder.
    public var name: String
    public var size: Int
    /// CRC32C of the file's bytes.
    public var checksum: UInt32
    public var state: State
    /// Unix milliseconds.
    public var createdAt: Int64
}

/// The `assets` table's SQL, on the writer connection (or the opening thread).
enum AssetRows {
    static func fetch(_ db: Database, where condition: String, _ arguments: StatementArguments = []) throws -> [Asset] {
        try Row.fetchAll(db, sql: """
            SELECT assets.id, \(EntityIDColumn.sql()) AS entity_id, name, size, checksum, state, assets.created_at
            FROM assets LEFT JOIN entities ON entities.num = assets.entity_num WHERE \(condition) ORDER BY assets.id
            """, arguments: arguments).map { row in
            // A state that does not read is `.missing`: the reconciliation looks at the file again.
            Asset(id: try row.decode(forColumn: "id"),
                  entity: row.value("entity_id", as: Data.self).flatMap { data in data.withUnsafeBytes { EntityID(bytes: $0) } },
                  name: try row.decode(forColumn: "name"), size: row.value("size") ?? 0,
                  checksum: UInt32(truncatingIfNeeded: row.value("checksum", as: Int64.self) ?? 0),
                  state: row.value("state", as: String.self).flatMap(Asset.State.init(rawValue:)) ?? .missing,
                  createdAt: row.value("created_at") ?? 0)
        }
    }

    /// Registers (or updates) the file `name`; nil if `entity` is given and not in the file (yet).
    static func register(_ db: Database, name: String, entity: EntityID?, size: Int, checksum: UInt32, now: Int64) throws -> Asset? {
        var number: Int64?
        if let entity {
            let id = entity.withBytes { Data($0) }
            _ = try PendingEntities.promote(id: id, db)   // the row refers to `entities`
            number = try Int64.fetchOne(db, sql: "SELECT num FROM entities WHERE \(EntityIDColumn.matching()) AND \(PendingEntities.Layout.current.live("num"))",
                                        arguments: EntityIDColumn.arguments(for: entity, db))
            guard number != nil else { return nil }
        }
        try db.execute(sql: """
            INSERT INTO assets (entity_num, name, size, checksum, state, created_at) VALUES (?, ?, ?, ?, 'present', ?)
            ON CONFLICT (name) DO UPDATE SET entity_num = excluded.entity_num, size = excluded.size,
                checksum = excluded.checksum, state = 'present'
            """, arguments: [number, name, size, Int64(checksum), now])
        try db.execute(sql: "DELETE FROM asset_trash WHERE name = ?", arguments: [name])
        return try fetch(db, where: "name = ?", [name]).first
    }

    /// The names of files whose rows went (their files are removed, then the names).
    static func trash(_ db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT name FROM asset_trash")
    }

    static func forget(trash names: [String], _ db: Database) throws {
        let statement = try db.cachedStatement(sql: "DELETE FROM asset_trash WHERE name = ?")
        for name in names { try statement.execute(arguments: [name]) }
    }
}

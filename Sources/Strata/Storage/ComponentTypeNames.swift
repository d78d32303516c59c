import GRDB

/// `component_types`: type names interned as small integers, which rows and records carry.
enum ComponentTypeNames {
    /// The id of `name`, interning it on first use.
    static func intern(_ name: String, _ db: Database) throws -> Int64 {
        try db.execute(sql: "INSERT INTO component_types (name) VALUES (?) ON CONFLICT (name) DO NOTHING", arguments: [name])
        return try Int64.fetchOne(db, sql: "SELECT id FROM component_types WHERE name = ?", arguments: [name])!
    }

    /// Every interned name by id.
    static func all(_ db: Database) throws -> [Int64: String] {
        var names: [Int64: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT id, name FROM component_types") { names[row["id"]] = row["name"] }
        return names
    }
}

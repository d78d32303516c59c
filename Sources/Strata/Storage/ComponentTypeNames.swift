import GRDB

/// `component_types`: type names interned as small integers, which rows and records carry.
enum ComponentTypeNames {
    /// The id of `name`, interning it on first use; with `replication`, its mode is recorded
    /// too (at open, from the type's declaration).
    static func intern(_ name: String, replication: Replication? = nil, _ db: Database) throws -> Int64 {
        if let replication {
            try db.execute(sql: """
                INSERT INTO component_types (name, replication) VALUES (?, ?)
                ON CONFLICT (name) DO UPDATE SET replication = excluded.replication WHERE replication != excluded.replication
                """, arguments: [name, replication.rawValue])
        } else {
            try db.execute(sql: "INSERT INTO component_types (name) VALUES (?) ON CONFLICT (name) DO NOTHING", arguments: [name])
        }
        guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM component_types WHERE name = ?", arguments: [name]) else {
            // Only a damaged table loses the row it was just given: say so, do not trap.
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "component_types has no row for \(name) right after interning it")
        }
        return id
    }

    /// The names of the types recorded as replicated (not `local`).
    static func replicated(_ db: Database) throws -> Set<String> {
        guard try db.columns(in: "component_types").contains(where: { $0.name == "replication" }) else { return [] }
        return Set(try String.fetchAll(db, sql: "SELECT name FROM component_types WHERE replication != 'local'"))
    }

    /// Every interned name by id.
    static func all(_ db: Database) throws -> [Int64: String] {
        var names: [Int64: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT id, name FROM component_types") {
            // A name that is not text names nothing: its rows read as of an unknown type, and stay.
            guard let id = row.value("id", as: Int64.self), let name = row.value("name", as: String.self) else { continue }
            names[id] = name
        }
        return names
    }
}

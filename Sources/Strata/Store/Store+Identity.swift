import GRDB

/// What a database file is, read before the engine changes anything in it: a new file,
/// a Strata document this build can open, one written by a newer Strata, or somebody
/// else's SQLite file. Only the first two are opened for writing.
package enum DocumentKind: Equatable, Sendable, CustomStringConvertible {
    /// No tables, no application id, no user version: the engine creates its schema.
    case empty
    /// A Strata document this build reads (its schema may be older: it migrates).
    case strata
    /// A Strata document with a schema this build does not know.
    case newerSchema(String)
    /// Not a Strata document.
    case foreign(String)

    /// `PRAGMA application_id` of a Strata document ("STRA"), set when the file is created.
    public static let applicationID: Int32 = 0x5354_5241

    /// Tables a Strata document may have: every kind of data's (``DataKind``), and those of
    /// an older schema that a migration replaced (the one operation log of schemas 3–13,
    /// the waiting despawns of schema 15).
    static let tables = Set(DataKind.allTables.map(\.name)).union(["operation_log", "pending_despawns"])

    /// Reads the header pragmas, the tables and the applied migrations. Reads only.
    static func classify(_ db: Database) throws -> DocumentKind {
        let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"))
        if tables.isEmpty && applicationID == 0 && version == 0 { return .empty }
        // A creation that failed after GRDB made its bookkeeping table and before the first
        // migration committed (an I/O error, a full disk): nothing else is in it.
        if tables == ["grdb_migrations"] && applicationID == 0 && version == 0,
           try Int.fetchOne(db, sql: "SELECT count(*) FROM grdb_migrations") == 0 {
            return .empty
        }
        if applicationID != 0 && applicationID != Self.applicationID {
            return .foreign("its application id is \(hex(applicationID)), not Strata's \(hex(Self.applicationID))")
        }
        // Files from before application ids were set are recognised by their session row's table.
        guard applicationID == Self.applicationID || tables.contains("session_state") else {
            return .foreign("it has no Strata tables (\(tables.isEmpty ? "none" : tables.sorted().joined(separator: ", ")))")
        }
        if version > Store.schemaVersion {
            return .newerSchema("written by a newer Strata: schema \(version), this build reads up to \(Store.schemaVersion)")
        }
        if tables.contains("grdb_migrations") {
            let known = Set(Store.migrator.migrations)
            let unknown = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").filter { !known.contains($0) }
            if let first = unknown.first {
                return .newerSchema("written by a newer Strata: migration \"\(first)\" is unknown to this build (schema \(Store.schemaVersion))")
            }
        }
        let others = tables.subtracting(Self.tables)
        guard others.isEmpty else {
            return .foreign("its tables \(others.sorted().joined(separator: ", ")) are not Strata's")
        }
        return .strata
    }

    private static func hex(_ id: Int32) -> String { "0x" + String(UInt32(bitPattern: id), radix: 16) }

    public var description: String {
        switch self {
        case .empty: "empty"
        case .strata: "strata"
        case .newerSchema(let why): "newer schema: \(why)"
        case .foreign(let why): "not a Strata document: \(why)"
        }
    }

    /// The kind, as `strata inspect --json` reports it.
    public var key: String {
        switch self {
        case .empty: "empty"
        case .strata: "strata"
        case .newerSchema: "newer_schema"
        case .foreign: "foreign"
        }
    }

    /// Throws unless the engine may open the file for writing.
    func requireWritable(path: String) throws {
        switch self {
        case .empty, .strata: return
        case .newerSchema(let why): throw StoreError(.newerSchema, message: "\(why); the file is left unchanged", path: path)
        case .foreign(let why):
            throw StoreError(.foreign, message: "not a Strata document: \(why); the file is left unchanged", path: path)
        }
    }
}

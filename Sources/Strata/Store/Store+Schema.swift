import GRDB

extension Store {
    /// The versioned schema. Append migrations; never edit a shipped one.
    ///
    /// Each migration also sets `PRAGMA user_version`, the schema version that
    /// `strata inspect` reports.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: entities, components, session state") { db in
            try db.execute(sql: """
                CREATE TABLE entities (
                    id BLOB PRIMARY KEY NOT NULL CHECK (length(id) = 16),
                    created_at INTEGER NOT NULL
                ) WITHOUT ROWID;

                -- Component type names, interned: rows carry a small integer, not the name.
                CREATE TABLE component_types (
                    id INTEGER PRIMARY KEY,
                    name TEXT NOT NULL UNIQUE
                );

                -- The primary key doubles as the index on entity_id that the cascade needs.
                CREATE TABLE components (
                    entity_id BLOB NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
                    type_id INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (entity_id, type_id)
                ) WITHOUT ROWID;

                -- One row: the crash-detection mark and the session counters.
                CREATE TABLE session_state (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    clean_shutdown INTEGER NOT NULL,
                    session_id BLOB NOT NULL,
                    started_at INTEGER NOT NULL,
                    ended_at INTEGER,
                    crash_count INTEGER NOT NULL DEFAULT 0,
                    clean_shutdown_count INTEGER NOT NULL DEFAULT 0
                );

                CREATE TABLE settings (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                ) WITHOUT ROWID;

                PRAGMA user_version = 1;
                """)
        }
        return migrator
    }

    /// The schema version this build writes.
    public static var schemaVersion: Int { 1 }
}

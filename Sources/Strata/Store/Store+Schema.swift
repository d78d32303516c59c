import GRDB

extension Store {
    /// The versioned schema. Append migrations (at the end of `Store+SchemaFromV6.swift`);
    /// never edit a shipped one.
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
        migrator.registerMigration("v2: entity numbers, segments, compaction state") { db in
            // Records and rows refer to an entity by a small integer (`num`) instead of its
            // 16-byte id. Existing entities are numbered in creation order. See
            // docs/storage.md for the layout and why.
            try db.execute(sql: """
                ALTER TABLE components RENAME TO components_v1;
                ALTER TABLE entities RENAME TO entities_v1;

                CREATE TABLE entities (
                    num INTEGER PRIMARY KEY,
                    id BLOB NOT NULL UNIQUE CHECK (length(id) = 16),
                    created_at INTEGER NOT NULL
                );
                INSERT INTO entities (id, created_at) SELECT id, created_at FROM entities_v1 ORDER BY created_at, id;

                -- Base rows: the state compaction has folded in. The primary key doubles as the
                -- index on entity_num that the cascade needs.
                CREATE TABLE components (
                    entity_num INTEGER NOT NULL REFERENCES entities(num) ON DELETE CASCADE,
                    type_id INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (entity_num, type_id)
                ) WITHOUT ROWID;
                INSERT INTO components (entity_num, type_id, version, payload, updated_at)
                    SELECT e.num, c.type_id, c.version, c.payload, c.updated_at
                    FROM components_v1 c JOIN entities e ON e.id = c.entity_id;

                DROP TABLE components_v1;
                DROP TABLE entities_v1;

                -- The segment log: every component write since the last compaction, appended
                -- in commit order. id = seq << 20 | part (Segment.swift); records last, so the
                -- small columns are read without walking the blob's overflow pages.
                CREATE TABLE segments (
                    id INTEGER PRIMARY KEY,
                    format INTEGER NOT NULL,
                    record_count INTEGER NOT NULL,
                    checksum INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    records BLOB NOT NULL
                );

                -- One row: what compaction has done over the life of the file.
                CREATE TABLE compaction_state (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    rounds INTEGER NOT NULL DEFAULT 0,
                    merges INTEGER NOT NULL DEFAULT 0,
                    folds INTEGER NOT NULL DEFAULT 0,
                    steps INTEGER NOT NULL DEFAULT 0,
                    last_round_at INTEGER
                );
                INSERT INTO compaction_state (id) VALUES (1);

                PRAGMA user_version = 2;
                """)
        }
        migrator.registerMigration("v3: replica node id, operation log, vector clock") { db in
            // Critical data: the operation log is the sync layer's source of truth, and
            // the vector clock (node → highest contiguous sequence) is rebuilt from it at
            // open. See OpLog/OperationLog.swift.
            try db.execute(sql: """
                -- One row: this replica's node id, created with the document's first v3 open.
                CREATE TABLE replica (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    node_id BLOB NOT NULL CHECK (length(node_id) = 16),
                    created_at INTEGER NOT NULL
                );

                -- Local and received operations. (node, seq) is the key peers exchange; the
                -- id deduplicates an operation that comes back under any key.
                CREATE TABLE operation_log (
                    node BLOB NOT NULL CHECK (length(node) = 16),
                    seq INTEGER NOT NULL CHECK (seq > 0),
                    id BLOB NOT NULL UNIQUE CHECK (length(id) = 16),
                    timestamp INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    logged_at INTEGER NOT NULL,
                    PRIMARY KEY (node, seq)
                ) WITHOUT ROWID;

                -- Node → highest contiguous sequence in operation_log, as last persisted.
                CREATE TABLE vector_clock (
                    node BLOB PRIMARY KEY NOT NULL CHECK (length(node) = 16),
                    seq INTEGER NOT NULL
                ) WITHOUT ROWID;

                -- What each known peer has acknowledged: its vector clock as it told us.
                CREATE TABLE peer_acks (
                    peer BLOB NOT NULL CHECK (length(peer) = 16),
                    node BLOB NOT NULL CHECK (length(node) = 16),
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (peer, node)
                ) WITHOUT ROWID;

                -- Node → the sequence through which operations were dropped by retention
                -- (every known peer had acknowledged them): they count as logged.
                CREATE TABLE operation_floor (
                    node BLOB PRIMARY KEY NOT NULL CHECK (length(node) = 16),
                    seq INTEGER NOT NULL
                ) WITHOUT ROWID;

                PRAGMA user_version = 3;
                """)
        }
        migrator.registerMigration("v4: rejected writes") { db in
            // Rows a commit rejected for a reason retrying cannot fix (a constraint, a value
            // too big), isolated from their batch, whose other rows committed. Kept until
            // the host replays or removes them (Writer+Rejection.swift, RejectedWrite).
            try db.execute(sql: """
                CREATE TABLE rejected_writes (
                    id INTEGER PRIMARY KEY,
                    rejected_at INTEGER NOT NULL,
                    error TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    entity BLOB,
                    entity_num INTEGER,
                    name TEXT,
                    number INTEGER,
                    payload BLOB
                );

                PRAGMA user_version = 4;
                """)
        }
        migrator.registerMigration("v5: rejected operations keep their id and timestamp") { db in
            // So that a parked operation can be logged again as it was (Engine+RejectedWrites.swift).
            try db.execute(sql: """
                ALTER TABLE rejected_writes ADD COLUMN operation_id BLOB;
                ALTER TABLE rejected_writes ADD COLUMN timestamp INTEGER;

                PRAGMA user_version = 5;
                """)
        }
        registerFromV6(&migrator)
        registerFromV17(&migrator)
        registerFromV18(&migrator)
        return migrator
    }

    /// The schema version this build writes: one per migration (each sets
    /// `PRAGMA user_version` to its number; `StoreTests` checks that they agree).
    public static var schemaVersion: Int { migrator.migrations.count }
}

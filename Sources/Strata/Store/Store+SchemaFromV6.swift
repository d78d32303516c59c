import GRDB

extension Store {
    /// Migrations 6 on: jobs and assets, the sync's state, the later layouts. Appended to
    /// ``migrator`` after 1–5 (`Store+Schema.swift`); append new ones here, last.
    static func registerFromV6(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6: jobs and assets") { db in
            // The document's durable job queue (Sources/Strata/Jobs): work that belongs to an
            // entity and outlives the process. `failed` jobs run again once `not_before`
            // passes; `dead` ones ran `max_attempts` times and wait for a person.
            try db.execute(sql: """
                CREATE TABLE jobs (
                    id INTEGER PRIMARY KEY,
                    entity_num INTEGER NOT NULL REFERENCES entities(num) ON DELETE CASCADE,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    priority INTEGER NOT NULL DEFAULT 0,
                    status TEXT NOT NULL CHECK (status IN ('pending', 'processing', 'failed', 'dead', 'done')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    last_error TEXT,
                    created_at INTEGER NOT NULL,
                    started_at INTEGER,
                    finished_at INTEGER,
                    not_before INTEGER NOT NULL DEFAULT 0,
                    UNIQUE (entity_num, kind)
                );
                -- The claim: the first runnable job of a kind, by priority then age.
                CREATE INDEX jobs_claim ON jobs (kind, status, priority DESC, id);
                -- Partial indexes, kept small: the jobs a crash interrupted (found at open
                -- whatever the backlog), and finished ones by age (their retention).
                CREATE INDEX jobs_processing ON jobs (id) WHERE status = 'processing';
                CREATE INDEX jobs_done ON jobs (finished_at) WHERE status = 'done';

                -- Files beside the document (PATH.assets/), one row each (Sources/Strata/Assets).
                -- `entity_num` is NULL for files adopted or imported without an owner.
                CREATE TABLE assets (
                    id INTEGER PRIMARY KEY,
                    entity_num INTEGER REFERENCES entities(num) ON DELETE CASCADE,
                    name TEXT NOT NULL UNIQUE,
                    size INTEGER NOT NULL,
                    checksum INTEGER NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('present', 'missing')),
                    created_at INTEGER NOT NULL
                );
                CREATE INDEX assets_entity ON assets (entity_num);
                -- Files whose rows went (their entity was despawned): removed from the folder
                -- after the commit, and at the next open if a crash came first.
                CREATE TABLE asset_trash (name TEXT PRIMARY KEY) WITHOUT ROWID;
                CREATE TRIGGER assets_to_trash AFTER DELETE ON assets
                BEGIN INSERT OR IGNORE INTO asset_trash (name) VALUES (OLD.name); END;

                PRAGMA user_version = 6;
                """)
        }
        migrator.registerMigration("v7: sync outbox state") { db in
            // The sync with a server (Sources/Strata/Sync). The outbox is this replica's
            // operations above `pushed_through` (the log holds them: nothing is copied), plus
            // those in `sync_failures`: ones the server refused, with their attempts, and
            // dead letters (`dead_at` set) that wait for `strata sync retry`.
            try db.execute(sql: """
                CREATE TABLE sync_state (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    server TEXT NOT NULL,
                    server_node BLOB,
                    pushed_through INTEGER NOT NULL DEFAULT 0,
                    last_push_at INTEGER,
                    last_pull_at INTEGER,
                    last_error TEXT,
                    last_error_at INTEGER
                );
                CREATE TABLE sync_failures (
                    seq INTEGER PRIMARY KEY,
                    attempts INTEGER NOT NULL,
                    last_error TEXT NOT NULL,
                    last_attempt_at INTEGER NOT NULL,
                    dead_at INTEGER
                );

                PRAGMA user_version = 7;
                """)
        }
        migrator.registerMigration("v8: segment records in format 2") { db in
            // No table changes: segment rows written from now on pack fixed-length groups
            // (Segment.swift, format 2). The version tells a build that reads only format 1
            // that the file is newer, instead of letting it find rows it cannot read.
            try db.execute(sql: "PRAGMA user_version = 8")
        }
        migrator.registerMigration("v9: the operation log in arrival order, no index that a hot path does not read") { db in
            // Every index is written by every insert and delete of its table, and every commit
            // rewrites the last page of each B-tree it appends to (docs/storage.md, "Pages per
            // commit"). The operation log was keyed by (node, seq) WITHOUT ROWID: each node's
            // operations sat in a range of their own, this replica's in the middle of the tree
            // as often as not, and a full leaf made SQLite rebalance it with its neighbours
            // (3 or 4 pages). Rows now go at the end of the table in arrival order (a full last
            // leaf just gets a new sibling), and a small unique index on (node, seq) finds and
            // deduplicates them. Its unique index on `id` cost a page per critical commit and
            // served no read. `jobs_processing` cost two writes per job (the claim, the
            // completion) and served one read at open, which `jobs_claim` answers by kind
            // (JobRows.recoverInterrupted).
            try db.execute(sql: """
                CREATE TABLE operation_log_v9 (
                    node BLOB NOT NULL CHECK (length(node) = 16),
                    seq INTEGER NOT NULL CHECK (seq > 0),
                    id BLOB NOT NULL CHECK (length(id) = 16),
                    timestamp INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    logged_at INTEGER NOT NULL,
                    UNIQUE (node, seq)
                );
                INSERT INTO operation_log_v9 (node, seq, id, timestamp, kind, payload, logged_at)
                    SELECT node, seq, id, timestamp, kind, payload, logged_at FROM operation_log ORDER BY logged_at, node, seq;
                DROP TABLE operation_log;
                ALTER TABLE operation_log_v9 RENAME TO operation_log;

                DROP INDEX IF EXISTS jobs_processing;

                PRAGMA user_version = 9;
                """)
        }
        migrator.registerMigration("v10: segment rows set aside, the time of the last check") { db in
            // A segment row that cannot be read (a bad checksum, a format this build does not
            // know) is moved here by compaction, with why, instead of stopping it for good:
            // the reload skipped it already, so the world is the same; its bytes are kept for
            // `strata doctor --export-set-aside` (CompactionTask+SetAside.swift).
            try db.execute(sql: """
                CREATE TABLE segments_set_aside (
                    id INTEGER PRIMARY KEY,
                    format INTEGER NOT NULL,
                    record_count INTEGER NOT NULL,
                    checksum INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    records BLOB NOT NULL,
                    reason TEXT NOT NULL,
                    set_aside_at INTEGER NOT NULL
                );

                -- When the file was last checked whole or in the tables a start does not read
                -- (SessionState.swift): a clean start checks them again past an age.
                ALTER TABLE session_state ADD COLUMN last_check_at INTEGER;

                PRAGMA user_version = 10;
                """)
        }
        migrator.registerMigration("v11: each component type's replication") { db in
            // Recorded at every open from the type's declaration (Component.replication), so
            // that a tool reading the file knows which types leave the device (the digest's
            // `replicated`, `strata inspect`).
            try db.execute(sql: """
                ALTER TABLE component_types ADD COLUMN replication TEXT NOT NULL DEFAULT 'local';
                PRAGMA user_version = 11;
                """)
        }
        migrator.registerMigration("v12: the despawns of replicated entities, found at open") { db in
            // A despawn logged for a replicated entity is its tombstone (ReplicatedOperation):
            // every open reads them. The index is partial, so no other operation pays for it.
            try db.execute(sql: """
                CREATE INDEX operation_log_despawns ON operation_log (kind) WHERE kind = 'strata.despawn';
                PRAGMA user_version = 12;
                """)
        }
        migrator.registerMigration("v13: history: the flushes of the window, despawned entities kept while it holds them") { db in
            // Written only with [history] keep_secs (Sources/Strata/History): one row per flush,
            // and an entity despawned within the window with its base rows as they were, so
            // that the world at any flush of the window can be rebuilt. `history_floor`: the
            // time of the newest segment compaction consumed, the window's first instant.
            try db.execute(sql: """
                CREATE TABLE history_flushes (
                    id INTEGER PRIMARY KEY,
                    at INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    keys INTEGER NOT NULL,
                    spawns INTEGER NOT NULL,
                    despawns INTEGER NOT NULL
                );
                CREATE TABLE despawned_entities (
                    num INTEGER PRIMARY KEY,
                    id BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    despawned_at INTEGER NOT NULL
                );
                CREATE TABLE despawned_components (
                    entity_num INTEGER NOT NULL,
                    type_id INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    PRIMARY KEY (entity_num, type_id)
                ) WITHOUT ROWID;
                ALTER TABLE compaction_state ADD COLUMN history_floor INTEGER NOT NULL DEFAULT 0;
                PRAGMA user_version = 13;
                """)
        }
        migrator.registerMigration("v14: the operation log in two tables, this replica's by sequence and the received") { db in
            // This replica's operations are appended in sequence order, so their sequence is
            // their rowid: no index to keep. The (node, seq) index, which cost a third of
            // the pages of the canvas's commits (its leaf for this node, another for a peer's,
            // and their splits), is now paid for received operations only. `operation_log`
            // is a view of both, for every reader; the writer, retention, the salvage and a
            // restore write the tables.
            try db.execute(sql: """
                CREATE TABLE local_operations (
                    seq INTEGER PRIMARY KEY CHECK (seq > 0),
                    id BLOB NOT NULL CHECK (length(id) = 16),
                    timestamp INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    logged_at INTEGER NOT NULL
                );
                CREATE TABLE received_operations (
                    node BLOB NOT NULL CHECK (length(node) = 16),
                    seq INTEGER NOT NULL CHECK (seq > 0),
                    id BLOB NOT NULL CHECK (length(id) = 16),
                    timestamp INTEGER NOT NULL,
                    kind TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    logged_at INTEGER NOT NULL,
                    UNIQUE (node, seq)
                );
                INSERT INTO local_operations (seq, id, timestamp, kind, payload, logged_at)
                    SELECT seq, id, timestamp, kind, payload, logged_at FROM operation_log
                    WHERE node = (SELECT node_id FROM replica WHERE id = 1) ORDER BY seq;
                INSERT INTO received_operations (node, seq, id, timestamp, kind, payload, logged_at)
                    SELECT node, seq, id, timestamp, kind, payload, logged_at FROM operation_log
                    WHERE node IS NOT (SELECT node_id FROM replica WHERE id = 1) ORDER BY rowid;
                DROP TABLE operation_log;
                CREATE INDEX local_operations_despawns ON local_operations (kind) WHERE kind = 'strata.despawn';
                CREATE INDEX received_operations_despawns ON received_operations (kind) WHERE kind = 'strata.despawn';
                \(Store.operationLogViewV14)
                PRAGMA user_version = 14;
                """)
        }
        migrator.registerMigration("v15: despawns wait for compaction in a small table of their own") { db in
            // A despawn used to delete its entity's row, its id from the id index and its
            // base rows at once: three random leaves per despawn, the largest share of a quiet
            // canvas commit's pages. It now inserts the entity's number here (one small
            // B-tree, whose few leaves every commit shares); compaction deletes the rows later,
            // many at a time. Every reader of `entities` leaves these numbers out
            // (`PendingEntities.Layout`). A document that keeps history despawns at once, as before.
            try db.execute(sql: """
                CREATE TABLE pending_despawns (num INTEGER PRIMARY KEY);
                PRAGMA user_version = 15;
                """)
        }
        migrator.registerMigration("v16: spawns wait for compaction too, in one table with the despawns") { db in
            // A spawn inserted its entity's row and its id into the id index: two leaves a
            // spawn, the largest share of a quiet canvas commit's pages after the despawns'.
            // A commit of a few spawns now appends `(num, id, created_at)` here, and a
            // despawn its `num` (`id` NULL). Keyed in arrival order, so both append at the
            // table's right edge (keyed by number, a despawn of an old entity landed on
            // another leaf than the spawns); compaction moves the spawns into `entities`
            // many at a time (`PendingEntities`). No index: the table stays small.
            try db.execute(sql: """
                CREATE TABLE pending_entities (
                    seq INTEGER PRIMARY KEY,
                    num INTEGER NOT NULL,
                    id BLOB CHECK (id IS NULL OR length(id) = 16),
                    created_at INTEGER
                );
                INSERT INTO pending_entities (num) SELECT num FROM pending_despawns ORDER BY num;
                DROP TABLE pending_despawns;
                PRAGMA user_version = 16;
                """)
        }
    }
}

extension Database {
    /// Whether the file has an operation log: the view of schema 14 on, the table before.
    func operationLogExists() throws -> Bool {
        try viewExists("operation_log") || tableExists("operation_log")
    }
}

import GRDB

extension Store {
    static func registerFromV18(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v18: repairs: where each damaged original was set aside, and what its salvage kept") { db in
            // A salvage builds the new document beside the old one and records, in the new
            // file, the original it was made from (`Repair.swift`): `strata doctor` names it,
            // and a later salvage copies the rows, so the record goes on from file to file.
            try db.execute(sql: """
                CREATE TABLE repairs (
                    id INTEGER PRIMARY KEY,
                    repaired_at INTEGER NOT NULL,
                    set_aside TEXT NOT NULL,
                    cause TEXT NOT NULL,
                    report TEXT NOT NULL
                );
                PRAGMA user_version = 18;
                """)
        }
        migrator.registerMigration("v19: replica nodes: the node ids stamps name, as small numbers") { db in
            // A replicated entity's stored state (`strata.replica`, payload version 3) names
            // each stamp's node by its number here and its type by `component_types.id`,
            // where version 2 wrote the node's 16 bytes and the type's name into every row
            // (`ReplicaState+Encoding.swift`). Numbers are never reused nor renumbered: a
            // salvage copies the rows as they are.
            try db.execute(sql: """
                CREATE TABLE replica_nodes (
                    idx INTEGER PRIMARY KEY,
                    node BLOB NOT NULL UNIQUE CHECK (length(node) = 16)
                );
                PRAGMA user_version = 19;
                """)
        }
        migrator.registerMigration("v20: segment records in format 3: coded against their key's previous payload") { db in
            // No table changes: segment rows of format 3 (`Segment.swift`) may code a moving
            // value against the one before it (`XorCoding.swift`). A build that reads formats
            // 1 and 2 only would find them unreadable and set them aside; the version tells
            // it the file is newer.
            try db.execute(sql: "PRAGMA user_version = 20")
        }
        migrator.registerMigration("v21: this replica's operations without what the row says already: ids made from the sequence, types by number") { db in
            // A canvas commit appends about ten of this replica's operations, a row of about
            // 80 bytes each, 35 of them an id and a type name (`StoredOperation.swift`). The
            // id may now be NULL (made from the node and the sequence) and `type` names a
            // `component_types` row whose name the payload leaves out; `operation_log` gives
            // both back. Rows logged before keep their ids and names, and stay where they are.
            try db.execute(sql: "DROP VIEW operation_log; ALTER TABLE local_operations ADD COLUMN type INTEGER")
            try letLocalOperationIDsBeNull(db)
            try db.execute(sql: "\(Store.operationLogViewV21) PRAGMA user_version = 21;")
        }
        migrator.registerMigration("v22: base rows without the time they were folded, which nothing read") { db in
            // `components.updated_at` was written with every base row (6 bytes of about 35 on
            // the canvas) and read by nothing. New rows leave it NULL; rows folded again lose
            // theirs; the others keep it until then.
            try letBaseRowTimesBeNull(db)
            try db.execute(sql: "PRAGMA user_version = 22")
        }
        migrator.registerMigration("v23: entity ids made from the node and the number, not stored") { db in
            // An entity's row was about 30 bytes, 16 of them its id, and the id index as
            // much again. An entity this document spawns now has an id made from the node
            // and its number (`EntityIDColumn`), stored NULL; rows written before keep theirs.
            // `numbers_through` keeps the highest number a deleted row had, so that no
            // number, and no id made from one, is given twice.
            try letEntityIDsBeNull(db)
            try db.execute(sql: """
                ALTER TABLE replica ADD COLUMN numbers_through INTEGER NOT NULL DEFAULT 0;
                \(EntityIDColumn.numbersThroughTriggers)
                PRAGMA user_version = 23;
                """)
        }
        migrator.registerMigration("v24: this replica's operations without their entity's id where it is made from the number") { db in
            // A canvas operation's row stored its entity's 16-byte id, which for the
            // entities this replica spawned is now made from the node and a number
            // (schema 23). `entity` holds that number, and the view puts the id back.
            try db.execute(sql: """
                DROP VIEW operation_log;
                ALTER TABLE local_operations ADD COLUMN entity INTEGER;
                \(Store.operationLogView)
                PRAGMA user_version = 24;
                """)
        }
        migrator.registerMigration("v25: a second copy of this replica's node id") { db in
            // The ids of the entities this replica spawned and of its operations are made
            // from its node id (schemas 21 and 23), which `replica`'s one row held alone; that
            // row's page is written at every compaction that deletes rows (`numbers_through`).
            // A salvage that lost it gave the document a new node and every such id a new
            // value. `replica_copy` holds the node again on a page of its own, written only
            // when the node is (two triggers): the salvage and the open take it from there
            // when `replica` does not read (`Salvage.recoverNode`, `Store.replicaNode`).
            try db.execute(sql: """
                CREATE TABLE replica_copy (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    node_id BLOB NOT NULL CHECK (length(node_id) = 16)
                );
                INSERT INTO replica_copy (id, node_id) SELECT 1, node_id FROM replica WHERE id = 1 AND length(node_id) = 16;
                \(Store.replicaCopyTriggers)
                PRAGMA user_version = 25;
                """)
        }
    }

    /// Keep `replica_copy` equal to `replica`'s node id (schema 25).
    static let replicaCopyTriggers = """
        CREATE TRIGGER replica_copy_on_insert AFTER INSERT ON replica WHEN new.id = 1 BEGIN
            INSERT OR REPLACE INTO replica_copy (id, node_id) VALUES (1, new.node_id);
        END;
        CREATE TRIGGER replica_copy_on_update AFTER UPDATE OF node_id ON replica WHEN new.id = 1 BEGIN
            INSERT OR REPLACE INTO replica_copy (id, node_id) VALUES (1, new.node_id);
        END;
        """

    /// Drops `components.updated_at`'s NOT NULL without rewriting the table (a million
    /// shapes' base rows are about 100 MB), as ``letLocalOperationIDsBeNull(_:)`` does; a
    /// table whose SQL is not the one schema 2 wrote is copied into a new one instead.
    static func letBaseRowTimesBeNull(_ db: Database) throws {
        let strict = "updated_at INTEGER NOT NULL", relaxed = "updated_at INTEGER"
        if try relax(table: "components", strict, to: relaxed, db) { return }
        try db.execute(sql: """
            CREATE TABLE components_v22 (
                entity_num INTEGER NOT NULL REFERENCES entities(num) ON DELETE CASCADE,
                type_id INTEGER NOT NULL,
                version INTEGER NOT NULL,
                payload BLOB NOT NULL,
                \(relaxed),
                PRIMARY KEY (entity_num, type_id)
            ) WITHOUT ROWID;
            INSERT INTO components_v22 (entity_num, type_id, version, payload, updated_at)
                SELECT entity_num, type_id, version, payload, updated_at FROM components;
            DROP TABLE components;
            ALTER TABLE components_v22 RENAME TO components;
            """)
    }

    /// Drops `entities.id`'s NOT NULL in place, as ``letBaseRowTimesBeNull(_:)`` does (a
    /// million entities' rows and ids are about 60 MB); a table whose SQL is not the one
    /// schema 2 wrote is copied into a new one instead.
    static func letEntityIDsBeNull(_ db: Database) throws {
        let strict = "id BLOB NOT NULL UNIQUE CHECK (length(id) = 16)", relaxed = "id BLOB UNIQUE CHECK (length(id) = 16)"
        if try relax(table: "entities", strict, to: relaxed, db) { return }
        try db.execute(sql: """
            CREATE TABLE entities_v23 (
                num INTEGER PRIMARY KEY,
                \(relaxed),
                created_at INTEGER NOT NULL
            );
            INSERT INTO entities_v23 (num, id, created_at) SELECT num, id, created_at FROM entities;
            DROP TABLE entities;
            ALTER TABLE entities_v23 RENAME TO entities;
            """)
    }

    /// Replaces `strict` with `relaxed` in `table`'s SQL in `sqlite_schema`, under a new
    /// schema version, the rows unchanged: SQLite's documented way to drop a NOT NULL or
    /// CHECK constraint (<https://sqlite.org/lang_altertable.html#otheralter>). False, and
    /// nothing changed, unless the SQL holds `strict` exactly once.
    private static func relax(table: String, _ strict: String, to relaxed: String, _ db: Database) throws -> Bool {
        let query = "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?"
        guard let sql = try String.fetchOne(db, sql: query, arguments: [table]), sql.components(separatedBy: strict).count == 2 else {
            return false
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
        try db.execute(sql: "PRAGMA writable_schema = ON")
        try db.execute(sql: "UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = ?",
                       arguments: [sql.replacingOccurrences(of: strict, with: relaxed), table])
        try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
        try db.execute(sql: "PRAGMA writable_schema = OFF")
        return true
    }

    /// Drops `local_operations.id`'s NOT NULL without rewriting the table (a big document's
    /// two million operations are about 170 MB, which a copy would write once more and
    /// leave free in the file): SQLite's documented way to drop a NOT NULL or CHECK
    /// constraint, the table's SQL edited in `sqlite_schema` under a new schema version
    /// (the rows do not change). A table whose SQL is not the one schema 17 wrote is
    /// copied into a new one instead.
    static func letLocalOperationIDsBeNull(_ db: Database) throws {
        let strict = "id BLOB NOT NULL CHECK (length(id) = 16)", relaxed = "id BLOB CHECK (id IS NULL OR length(id) = 16)"
        if try relax(table: "local_operations", strict, to: relaxed, db) { return }
        try db.execute(sql: """
            CREATE TABLE local_operations_v21 (
                seq INTEGER PRIMARY KEY CHECK (seq > 0),
                \(relaxed),
                timestamp INTEGER NOT NULL,
                kind NOT NULL CHECK (typeof(kind) IN ('integer', 'text')),
                payload BLOB NOT NULL,
                type INTEGER
            );
            INSERT INTO local_operations_v21 (seq, id, timestamp, kind, payload, type)
                SELECT seq, id, timestamp, kind, payload, type FROM local_operations ORDER BY seq;
            DROP TABLE local_operations;
            ALTER TABLE local_operations_v21 RENAME TO local_operations;
            CREATE INDEX local_operations_despawns ON local_operations (kind) WHERE \(OperationKindCode.despawnSQL);
            """)
    }
}

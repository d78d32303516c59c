import GRDB

extension Store {
    static func registerFromV17(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v17: this replica's operations in shorter rows: Strata's kinds as codes, no logged_at") { db in
            // A canvas commit appends about ten of this replica's operations, and every
            // page they fill is written twice (the WAL, then the checkpoint). Their rows lose
            // about a quarter: Strata's own kinds ("strata.component", "strata.despawn",
            // 16 and 14 bytes of text on every row) are stored as the integers
            // `OperationKindCode` lists (0 and 1 byte), a host's kinds as their text (the
            // column has no type, so SQLite keeps each as it comes); `logged_at` is the
            // timestamp's milliseconds (a hybrid timestamp is the wall clock at logging, or
            // a little ahead of it), computed by the view. Received operations keep theirs.
            try db.execute(sql: """
                DROP VIEW operation_log;
                CREATE TABLE local_operations_v17 (
                    seq INTEGER PRIMARY KEY CHECK (seq > 0),
                    id BLOB NOT NULL CHECK (length(id) = 16),
                    timestamp INTEGER NOT NULL,
                    kind NOT NULL CHECK (typeof(kind) IN ('integer', 'text')),
                    payload BLOB NOT NULL
                );
                INSERT INTO local_operations_v17 (seq, id, timestamp, kind, payload)
                    SELECT seq, id, timestamp, \(OperationKindCode.encodeSQL("kind")), payload FROM local_operations ORDER BY seq;
                DROP TABLE local_operations;
                ALTER TABLE local_operations_v17 RENAME TO local_operations;
                CREATE INDEX local_operations_despawns ON local_operations (kind) WHERE \(OperationKindCode.despawnSQL);
                \(Store.operationLogViewV17)
                PRAGMA user_version = 17;
                """)
        }
    }

    /// Every operation, this replica's and the received, as one table of
    /// `(node, seq, id, timestamp, kind, payload, logged_at)`: what readers query. This
    /// replica's rows are given back whole from their stored form (``StoredOperation``).
    /// A `node = ? AND seq > ? ORDER BY seq LIMIT ?` through it sorts every row of the node
    /// above the range before it gives the first: a read of one node's range queries that
    /// node's table (`OperationLogReader.operations(of:after:limit:_:)`); one on `kind` is a
    /// scan of this replica's half (query the table with ``OperationKindCode`` instead).
    static let operationLogView = """
        CREATE VIEW operation_log (node, seq, id, timestamp, kind, payload, logged_at) AS
            \(StoredOperation.localSQL)
            UNION ALL
            SELECT node, seq, id, timestamp, kind, payload, logged_at FROM received_operations;
        """

    /// The view as schema 21 made it (its migration still runs on older files).
    static let operationLogViewV21 = """
        CREATE VIEW operation_log (node, seq, id, timestamp, kind, payload, logged_at) AS
            \(StoredOperation.localSQLV21)
            UNION ALL
            SELECT node, seq, id, timestamp, kind, payload, logged_at FROM received_operations;
        """

    /// The view as schema 17 made it (its migration still runs on older files).
    static let operationLogViewV17 = """
        CREATE VIEW operation_log (node, seq, id, timestamp, kind, payload, logged_at) AS
            SELECT (SELECT node_id FROM replica WHERE id = 1), seq, id, timestamp, \(OperationKindCode.decodeSQL("kind")),
                   payload, timestamp >> 16 FROM local_operations
            UNION ALL
            SELECT node, seq, id, timestamp, kind, payload, logged_at FROM received_operations;
        """

    /// The view as schema 14 made it (its migration still runs on older files).
    static let operationLogViewV14 = """
        CREATE VIEW operation_log (node, seq, id, timestamp, kind, payload, logged_at) AS
            SELECT (SELECT node_id FROM replica WHERE id = 1), seq, id, timestamp, kind, payload, logged_at FROM local_operations
            UNION ALL
            SELECT node, seq, id, timestamp, kind, payload, logged_at FROM received_operations;
        """
}

import Foundation

/// The sync's schema in PostgreSQL, created by the first client that connects (a device's
/// direct transport or the sync service, under an advisory lock, so two first clients do
/// not race), versioned in `strata_sync_meta`. Append migrations; never edit a shipped one.
///
/// Every table is keyed by document first and no statement crosses documents, so the
/// tables distribute by document (docs/sync.md, *Past one server*).
public enum SyncSchema {
    /// The version this build writes.
    public static let version = 4

    /// Migration `n` brings the schema from `n - 1` to `n`: statements run one by one in
    /// one transaction.
    public static let migrations: [Int: [String]] = [
        1: [
            """
            CREATE TABLE strata_operations (
                position bigserial PRIMARY KEY,
                document text NOT NULL,
                id uuid NOT NULL,
                node uuid NOT NULL,
                seq bigint NOT NULL CHECK (seq > 0),
                hlc bigint NOT NULL,
                kind text NOT NULL,
                payload bytea NOT NULL,
                received_at timestamptz NOT NULL DEFAULT now(),
                UNIQUE (document, id),
                UNIQUE (document, node, seq)
            )
            """,
            "CREATE INDEX strata_operations_pull ON strata_operations (document, position)",
            // One round trip per push; pushes to a document take turns, so positions grow in
            // commit order (a pull paging by position never skips a late commit).
            """
            CREATE FUNCTION strata_push(doc text, ids uuid[], nodes uuid[], seqs int8[], hlcs int8[], kinds text[], payloads bytea[])
            RETURNS int8 LANGUAGE plpgsql AS $$
            DECLARE inserted int8;
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('strata_push'), hashtext(doc));
                INSERT INTO strata_operations (document, id, node, seq, hlc, kind, payload)
                SELECT doc, t.id, t.node, t.seq, t.hlc, t.kind, t.payload
                FROM unnest(ids, nodes, seqs, hlcs, kinds, payloads) AS t(id, node, seq, hlc, kind, payload)
                ORDER BY t.node, t.seq
                ON CONFLICT DO NOTHING;
                GET DIAGNOSTICS inserted = ROW_COUNT;
                RETURN inserted;
            END $$
            """,
        ],
        // Push without polling: a push that stored something notifies the document's
        // channel (no payload: listeners pull by position). NOTIFY is sent at commit, and
        // several in one transaction are one.
        2: [
            """
            CREATE OR REPLACE FUNCTION strata_push(doc text, ids uuid[], nodes uuid[], seqs int8[], hlcs int8[], kinds text[], payloads bytea[])
            RETURNS int8 LANGUAGE plpgsql AS $$
            DECLARE inserted int8;
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('strata_push'), hashtext(doc));
                INSERT INTO strata_operations (document, id, node, seq, hlc, kind, payload)
                SELECT doc, t.id, t.node, t.seq, t.hlc, t.kind, t.payload
                FROM unnest(ids, nodes, seqs, hlcs, kinds, payloads) AS t(id, node, seq, hlc, kind, payload)
                ORDER BY t.node, t.seq
                ON CONFLICT DO NOTHING;
                GET DIAGNOSTICS inserted = ROW_COUNT;
                IF inserted > 0 THEN
                    PERFORM pg_notify('strata_' || md5(doc), '');
                END IF;
                RETURN inserted;
            END $$
            """,
        ],
        // The sync service: members of a document and their roles, the subject each node
        // belongs to (the first that pushed it), who pushed each operation (NULL: a device's
        // direct transport), and one channel every push notifies with the document's md5 and
        // its newest position (a service instance listens once for every document, and knows
        // without a query that a pull is up to date).
        3: [
            "ALTER TABLE strata_operations ADD COLUMN pushed_by text",
            """
            CREATE TABLE strata_members (
                document text NOT NULL,
                subject text NOT NULL,
                role text NOT NULL CHECK (role IN ('reader', 'writer', 'owner')),
                granted_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (document, subject)
            )
            """,
            """
            CREATE TABLE strata_nodes (
                document text NOT NULL,
                node uuid NOT NULL,
                subject text NOT NULL,
                first_pushed_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (document, node)
            )
            """,
            """
            CREATE FUNCTION strata_push_as(doc text, who text, ids uuid[], nodes uuid[], seqs int8[], hlcs int8[], kinds text[], payloads bytea[])
            RETURNS int8 LANGUAGE plpgsql AS $$
            DECLARE inserted int8; taken uuid; newest int8;
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('strata_push'), hashtext(doc));
                IF who IS NOT NULL THEN
                    INSERT INTO strata_nodes (document, node, subject)
                    SELECT DISTINCT doc, n, who FROM unnest(nodes) AS n
                    ON CONFLICT DO NOTHING;
                    SELECT s.node INTO taken FROM strata_nodes s
                    WHERE s.document = doc AND s.node = ANY(nodes) AND s.subject <> who LIMIT 1;
                    IF taken IS NOT NULL THEN
                        RAISE EXCEPTION 'node % belongs to another subject', taken USING ERRCODE = 'SN403';
                    END IF;
                END IF;
                INSERT INTO strata_operations (document, id, node, seq, hlc, kind, payload, pushed_by)
                SELECT doc, t.id, t.node, t.seq, t.hlc, t.kind, t.payload, who
                FROM unnest(ids, nodes, seqs, hlcs, kinds, payloads) AS t(id, node, seq, hlc, kind, payload)
                ORDER BY t.node, t.seq
                ON CONFLICT DO NOTHING;
                GET DIAGNOSTICS inserted = ROW_COUNT;
                IF inserted > 0 THEN
                    SELECT max(position) INTO newest FROM strata_operations WHERE document = doc;
                    PERFORM pg_notify('strata_' || md5(doc), '');
                    PERFORM pg_notify('strata_changes', md5(doc) || ' ' || newest);
                END IF;
                RETURN inserted;
            END $$
            """,
            """
            CREATE OR REPLACE FUNCTION strata_push(doc text, ids uuid[], nodes uuid[], seqs int8[], hlcs int8[], kinds text[], payloads bytea[])
            RETURNS int8 LANGUAGE sql AS $$
                SELECT strata_push_as(doc, NULL, ids, nodes, seqs, hlcs, kinds, payloads)
            $$
            """,
        ],
        // Operations are one by (node, seq) only. A device makes its operations' ids from its
        // node and the sequence (Strata's schema 21), so anyone who has pulled one can work
        // out the ids of the next: with ids unique, a member that pushed them first under a
        // node of its own would have made the owner's pushes insert nothing, silently (a
        // conflict does nothing, and the device counts the operation as already there).
        4: [
            "ALTER TABLE strata_operations DROP CONSTRAINT IF EXISTS strata_operations_document_id_key",
        ],
    ]

    /// The channel every push notifies; the payload is the md5 of its document and the
    /// document's newest position, separated by a space.
    public static let changesChannel = "strata_changes"

    /// The SQLSTATE `strata_push_as` raises for a node another subject pushed first.
    public static let nodeTakenState = "SN403"

    /// The channel a document's pushes notify: `strata_` and the md5 of its name (a
    /// channel is an identifier of at most 63 bytes; a document's name may be anything).
    public static func channel(of document: String, on connection: PGConnection) throws -> String {
        let rows = try connection.query("SELECT 'strata_' || md5($1)", [document])
        guard let channel = rows.first?.first ?? nil, channel.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
            throw PGConnectionError(.malformed, "the server did not name the document's channel")
        }
        return channel
    }

    /// Creates or upgrades the schema; returns the server's node id, the schema version
    /// and the server's version string.
    public static func prepare(_ connection: PGConnection) throws -> (UUID, Int, String) {
        try connection.query("BEGIN")
        do {
            try connection.query("SELECT pg_advisory_xact_lock(hashtext('strata_schema'))")
            try connection.query("""
                CREATE TABLE IF NOT EXISTS strata_sync_meta (
                    id int PRIMARY KEY CHECK (id = 1), node uuid NOT NULL, schema_version int NOT NULL)
                """)
            try connection.query("INSERT INTO strata_sync_meta VALUES (1, gen_random_uuid(), 0) ON CONFLICT DO NOTHING")
            let rows = try connection.query("SELECT node, schema_version, version() FROM strata_sync_meta")
            guard let first = rows.first, first.count == 3, let node = first[0].flatMap(UUID.init(uuidString:)),
                  let current = first[1].flatMap({ Int($0) }), let server = first[2]
            else { throw PGConnectionError(.malformed, "strata_sync_meta is empty or unreadable") }
            guard current <= version else {
                throw PGConnectionError(.malformed, "the server's sync schema is version \(current); this build knows up to \(version)")
            }
            for step in (current + 1) ..< (version + 1) {
                for statement in migrations[step] ?? [] { try connection.query(statement) }
                try connection.query("UPDATE strata_sync_meta SET schema_version = $1", [String(step)])
            }
            try connection.query("COMMIT")
            let short = server.split(separator: " ").prefix(2).joined(separator: " ")
            return (node, version, short)
        } catch {
            _ = try? connection.query("ROLLBACK")
            throw error
        }
    }
}

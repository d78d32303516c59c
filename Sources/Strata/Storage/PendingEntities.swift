import Foundation
import GRDB
import GRDBSQLite

/// Entity rows that wait for compaction (schema 16, docs/storage.md, *Spawns and despawns*):
/// the table `pending_entities (seq INTEGER PRIMARY KEY, num, id, created_at)`, in arrival
/// order so that every commit appends at its right edge; no index (it stays a few pages:
/// compaction empties it, and a round starts past ``CompactionTask/pendingEntitiesBound``).
///
/// - **A spawn waits** (`id` set): a commit of a few spawns inserts `(num, id, created_at)`
///   here, at the right edge of one small B-tree, instead of a row in `entities` and its id
///   in the id index (two leaves a spawn). Compaction moves the rows into `entities`, many
///   at a time (``promoteSpawns(_:)``); so does a job or an asset that names the entity
///   (``promote(id:_:)``: their rows refer to `entities`).
/// - **A despawn waits** (`id` NULL): the entity's number only. Its jobs and asset files go
///   at once; compaction deletes its row and base rows later (``applyDespawns(limit:_:)``),
///   where deleting them at once cost three random leaves a despawn. A spawn that waits
///   here and is despawned gets a despawn row beside its own (appended, not an update of
///   an older leaf); every reader takes the despawn row's word, and compaction deletes both
///   (the log's records that name the number are dropped with them).
///
/// Every reader sees the world through both: the reload, `strata inspect` and the digest,
/// the history's queries, the job and asset lookups by id, compaction (``Layout``). A
/// document that keeps history writes `entities` at once, as before (its window copies the
/// rows as they go).
///
/// Writer thread for the writes; the readers' SQL on any thread.
enum PendingEntities {
    /// What a file keeps of waiting entities, for readers of any schema (a read-only tool
    /// opens older files as they are).
    struct Layout: Equatable {
        /// The numbers whose despawn waits, as a subquery; nil: none can (before schema 15).
        let despawns: String?
        /// Whether spawns can wait (schema 16 on).
        let spawns: Bool

        /// The writer's file: migrated, so schema 16.
        static let current = Layout(despawns: "SELECT num FROM pending_entities WHERE id IS NULL", spawns: true)

        /// A condition that holds for the entity numbered `column` unless its despawn waits.
        func live(_ column: String) -> String {
            despawns.map { "\(column) NOT IN (\($0))" } ?? "1"
        }

        /// `(num, id)` of the spawns that wait, created by `asOf` (`?1`) if given (a number
        /// with a despawn row too is for the caller to leave out); nil if none can.
        func spawnRows(asOf: Bool) -> String? {
            guard spawns else { return nil }
            return "SELECT num, id FROM pending_entities WHERE id IS NOT NULL" + (asOf ? " AND created_at <= ?1" : "")
        }
    }

    static func layout(_ db: Database) throws -> Layout {
        if try db.tableExists("pending_entities") { return .current }
        if try db.tableExists("pending_despawns") { return Layout(despawns: "SELECT num FROM pending_despawns", spawns: false) }
        return Layout(despawns: nil, spawns: false)
    }

    /// The numbers whose despawn waits.
    static func despawnNumbers(_ db: Database) throws -> Set<EntityNumber> {
        guard let sql = try layout(db).despawns else { return [] }
        return Set(try EntityNumber.fetchAll(db, sql: sql))
    }

    /// Entities whose spawn waits and was not despawned since (`strata inspect`'s count).
    static func liveSpawnCount(_ db: Database) throws -> Int {
        guard try db.tableExists("pending_entities") else { return 0 }
        return try Int.fetchOne(db, sql: """
            SELECT count(*) FROM pending_entities WHERE id IS NOT NULL AND \(Layout.current.live("num"))
            """) ?? 0
    }

    /// How many spawn rows and despawn rows wait (the writer's ``SegmentLog`` counts: the
    /// work compaction has left; a spawn despawned while it waits has both). A row whose
    /// number is not an integer (damage) names no entity: no work, never counted (else
    /// compaction would take it up again and again); it stays, and `strata doctor` counts it.
    static func counts(_ db: Database) throws -> (spawns: Int, despawns: Int) {
        guard try db.tableExists("pending_entities") else { return (0, try despawnNumbers(db).count) }
        let row = try Row.fetchOne(db, sql: "SELECT count(id), count(*) - count(id) FROM pending_entities WHERE typeof(num) = 'integer'")
        return (row?.value(at: 0) ?? 0, row?.value(at: 1) ?? 0)
    }

    // MARK: Writes (writer thread)

    /// Records a commit's spawns, in number order.
    static func recordSpawns(_ rows: [EntityInsert], at now: Int64, _ db: Database) throws {
        let insert = try db.cachedStatement(sql: "INSERT INTO pending_entities (num, id, created_at) VALUES (?, ?, ?)").sqliteStatement
        for row in rows {
            try row.id.withBytes { id in
                sqlite3_bind_int64(insert, 1, row.number)
                try checkBind(sqlite3_bind_blob(insert, 2, id.baseAddress, 16, SQLITE_STATIC), 2)
                sqlite3_bind_int64(insert, 3, now)
                try stepDone(insert, db)
            }
        }
    }

    /// Records the despawns of a commit, and deletes what they own that must not outlive
    /// them: their jobs (a worker must not run one) and their assets (the trigger moves
    /// their files to the trash, removed after the commit). Lookups through indexes: an
    /// entity with neither writes nothing there (a waiting spawn has neither: they would
    /// have made it a row). Returns how many despawn rows were added.
    static func recordDespawns(_ numbers: [EntityNumber], _ db: Database) throws -> Int {
        // What waits already, read once (the table has no index by number).
        var waitingSpawns = Set<EntityNumber>(), waitingDespawns = Set<EntityNumber>()
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT num, id IS NULL FROM pending_entities")) {
            // A number that does not read (damage) names no entity: it stays, and is skipped.
            guard let number = row.value(at: 0, as: EntityNumber.self) else { continue }
            if row.value(at: 1, as: Bool.self) == true { waitingDespawns.insert(number) } else { waitingSpawns.insert(number) }
        }
        let insert = try db.cachedStatement(sql: "INSERT INTO pending_entities (num) VALUES (?)").sqliteStatement
        let jobs = try db.cachedStatement(sql: "DELETE FROM jobs WHERE entity_num = ?").sqliteStatement
        let assets = try db.cachedStatement(sql: "DELETE FROM assets WHERE entity_num = ?").sqliteStatement
        var added = 0
        for number in numbers where waitingDespawns.insert(number).inserted {
            added += 1
            for statement in waitingSpawns.contains(number) ? [insert] : [insert, jobs, assets] {
                sqlite3_bind_int64(statement, 1, number)
                try stepDone(statement, db)
            }
        }
        return added
    }

    /// Inserts rows into `entities`, in id order (the id index then takes them page by
    /// page). An id held by an entity whose despawn waits frees it first (a host that
    /// spawns an id again). Returns how many waiting despawns that applied.
    /// An id made from the document's node and the row's number is stored NULL (``EntityIDColumn``).
    static func insertEntities(_ rows: [EntityInsert], at now: (EntityInsert) -> Int64, _ db: Database) throws -> Int {
        let insert = try db.cachedStatement(sql: "INSERT INTO entities (num, id, created_at) VALUES (?, ?, ?)").sqliteStatement
        let node = try EntityIDColumn.node(db)
        var applied = 0
        for row in rows {
            try row.id.withBytes { id in
                sqlite3_bind_int64(insert, 1, row.number)
                if EntityIDColumn.isDerived(row.id, number: row.number, node: node) {
                    sqlite3_bind_null(insert, 2)
                } else {
                    try checkBind(sqlite3_bind_blob(insert, 2, id.baseAddress, 16, SQLITE_STATIC), 2)
                }
                sqlite3_bind_int64(insert, 3, now(row))
                do {
                    try stepDone(insert, db)
                } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                    // The bindings outlive the reset.
                    guard try applyHolding(id: id, db) else { throw error }
                    applied += 1
                    try stepDone(insert, db)
                }
            }
        }
        return applied
    }

    /// An entity is spawned with the id of one whose despawn waits here: that despawn is
    /// applied now, so the id is free for the new row. Returns false if none holds the id.
    private static func applyHolding(id: UnsafeRawBufferPointer, _ db: Database) throws -> Bool {
        guard let despawns = Layout.current.despawns, let entity = EntityID(bytes: id), let number = try EntityNumber.fetchOne(db, sql: """
            SELECT num FROM entities WHERE \(EntityIDColumn.matching()) AND num IN (\(despawns))
            """, arguments: try EntityIDColumn.arguments(for: entity, db)) else { return false }
        try db.execute(sql: "DELETE FROM entities WHERE num = ?", arguments: [number])
        try db.execute(sql: "DELETE FROM pending_entities WHERE num = ? AND id IS NULL", arguments: [number])
        return true
    }

    /// Moves every waiting spawn that was not despawned since into `entities`. Returns the
    /// change to the waiting counts.
    static func promoteSpawns(_ db: Database) throws -> (spawns: Int, despawns: Int) {
        try promote(where: "id IS NOT NULL AND \(Layout.current.live("num"))", [], db)
    }

    /// Moves the waiting spawn of `id` into `entities`, if one waits and was not despawned
    /// since (a job or an asset is about to name it). Returns the change to the waiting counts.
    static func promote(id: Data, _ db: Database) throws -> (spawns: Int, despawns: Int) {
        try promote(where: "id = ? AND \(Layout.current.live("num"))", [id], db)
    }

    private static func promote(where condition: String, _ arguments: StatementArguments,
                                _ db: Database) throws -> (spawns: Int, despawns: Int) {
        var rows: [EntityInsert] = []
        var created: [EntityNumber: Int64] = [:]
        var seqs: [Int64] = []
        var malformed: [Int64] = []
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT seq, num, id, created_at FROM pending_entities WHERE \(condition)"),
                                    arguments: arguments) {
            let seq = try row.decode(Int64.self, atIndex: 0)
            guard let data = try? row.decode(Data?.self, atIndex: 2), let id = data.withUnsafeBytes({ EntityID(bytes: $0) }),
                  let number = try? row.decode(EntityNumber.self, atIndex: 1) else {
                malformed.append(seq)
                continue
            }
            seqs.append(seq)
            rows.append(EntityInsert(number: number, id: id))
            created[number] = (try? row.decode(Int64?.self, atIndex: 3)) ?? 0
        }
        // An id that does not read as one cannot reach `entities` (the reload did not load
        // it either): its spawn becomes a despawn, and goes with the next ones.
        for seq in malformed {
            try db.execute(sql: "UPDATE pending_entities SET id = NULL, created_at = NULL WHERE seq = ?", arguments: [seq])
        }
        guard !rows.isEmpty else { return (-malformed.count, malformed.count) }
        rows.sort { x, y in x.id.withBytes { a in y.id.withBytes { b in a.lexicographicallyPrecedes(b) } } }
        let applied = try insertEntities(rows, at: { created[$0.number] ?? 0 }, db)
        let delete = try db.cachedStatement(sql: "DELETE FROM pending_entities WHERE seq = ?").sqliteStatement
        for seq in seqs {
            sqlite3_bind_int64(delete, 1, seq)
            try stepDone(delete, db)
        }
        return (-rows.count - malformed.count, malformed.count - applied)
    }

    /// Deletes the rows of at most `limit` waiting despawns (their base rows go by
    /// `ON DELETE CASCADE`), lowest numbers first, and forgets them. Returns how many
    /// despawns and base rows went. Inside the caller's transaction (a compaction step).
    static func applyDespawns(limit: Int, _ db: Database) throws -> (despawns: Int, baseRows: Int) {
        let numbers = try EntityNumber.fetchAll(db, sql: """
            SELECT num FROM pending_entities WHERE id IS NULL AND typeof(num) = 'integer' ORDER BY num LIMIT ?
            """, arguments: [limit])
        guard let last = numbers.last else { return (0, 0) }
        let those = "SELECT num FROM pending_entities WHERE id IS NULL AND typeof(num) = 'integer' AND num <= \(last)"
        let baseRows = try Int.fetchOne(db, sql: "SELECT count(*) FROM components WHERE entity_num IN (\(those))") ?? 0
        try db.execute(sql: "DELETE FROM entities WHERE num IN (\(those))")
        // Their rows here: the despawn's, and a spawn's that never became a row.
        try db.execute(sql: "DELETE FROM pending_entities WHERE num IN (\(those))")
        return (numbers.count, baseRows)
    }
}

import Foundation
import GRDB
import Testing
@testable import Strata

@Suite struct StoreTests {
    @Test func theEnginesPragmasAreInForce() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let pragmas = try engine.store.withConnection { db in
            try [
                "journal_mode": String.fetchOne(db, sql: "PRAGMA journal_mode")!,
                "page_size": String.fetchOne(db, sql: "PRAGMA page_size")!,
                "synchronous": String.fetchOne(db, sql: "PRAGMA synchronous")!,
                "wal_autocheckpoint": String.fetchOne(db, sql: "PRAGMA wal_autocheckpoint")!,
                "foreign_keys": String.fetchOne(db, sql: "PRAGMA foreign_keys")!,
                "journal_size_limit": String.fetchOne(db, sql: "PRAGMA journal_size_limit")!,
                "user_version": String.fetchOne(db, sql: "PRAGMA user_version")!,
            ]
        }
        #expect(pragmas == [
            "journal_mode": "wal", "page_size": "512", "synchronous": "1", "wal_autocheckpoint": "0",
            "foreign_keys": "1", "journal_size_limit": "\(5 * 1024 * 1024)", "user_version": "\(Store.schemaVersion)",
        ])
        try engine.shutdown()
    }

    @Test func theConfiguredPageSizeAppliesToANewFile() throws {
        var fixture = EngineFixture()
        fixture.config.database.pageSize = 16384
        let engine = try fixture.open()
        try engine.shutdown()
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).pageSize == 16384)
    }

    @Test func pathsWithURICharactersOpenTheRightFile() throws {
        let directory = TestDirectory()
        let path = directory.url.appendingPathComponent("odd ?#%name.db").path
        let location = StoreLocation(path: path, vfs: "unix")
        #expect(location.uri.hasSuffix("odd%20%3F%23%25name.db?vfs=unix"))
        let store = try Store(location: location)
        try store.close()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func missingParentDirectoriesAreCreated() throws {
        let directory = TestDirectory()
        let path = directory.url.appendingPathComponent("a/b/doc.db").path
        try Store(location: StoreLocation(path: path)).close()
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func anUnknownVfsIsAnOpenError() throws {
        let directory = TestDirectory()
        #expect(throws: StoreError.self) {
            try Store(location: StoreLocation(path: directory.databasePath, vfs: "no-such-vfs"))
        }
    }

    @Test func rowsOfUnregisteredTypesAreKeptUntouched() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            engine.world.spawn(Position(x: 1, y: 1), Title("kept"))
            try engine.shutdown()
        }
        do {
            let engine = try Engine.open(config: fixture.config, components: [Position.self], logger: quietLogger, options: fixture.options)
            #expect(engine.recovery.loaded.unknownTypeRows == 1)
            #expect(engine.recovery.loaded.components == 1)
            let e = try #require(engine.world.entities.first)
            engine.world.mutate(Position.self, of: e) { $0.x = 2 }
            try engine.shutdown()
        }
        #expect(try fixture.componentCount(Title.self) == 1)
        let engine = try fixture.open()
        #expect(engine.world.get(Title.self, for: engine.world.entities[0]) == Title("kept"))
        #expect(engine.world.get(Position.self, for: engine.world.entities[0]) == Position(x: 2, y: 1))
        try engine.shutdown()
    }

    @Test(arguments: [false, true])
    func payloadsFromANewerBuildAreKeptButNotLoaded(compacted: Bool) throws {
        let fixture = EngineFixture()
        do {   // a newer build, whose Title is version 2
            let engine = try Engine.open(config: fixture.config, components: [Position.self, TitleV2.self],
                                         logger: quietLogger, options: fixture.options)
            engine.world.spawn(Position(x: 1, y: 1), TitleV2(text: "t", subtitle: "s"))
            if compacted { #expect(engine.compactNow()) }
            try engine.shutdown()
        }
        do {   // this build reads version 1 only
            let engine = try fixture.open()
            #expect(engine.recovery.loaded.undecodableRows == 1)
            #expect(engine.recovery.loaded.components == 1)
            #expect(engine.world.get(Title.self, for: engine.world.entities[0]) == nil)
            engine.world.mutate(Position.self, of: engine.world.entities[0]) { $0.x = 2 }
            #expect(engine.compactNow(), "compaction moves the bytes it cannot read, untouched")
            try engine.shutdown()
        }
        let stored = try #require(try fixture.persisted().entities.values.first?[Title.typeName])
        #expect(stored.version == 2)
        let engine = try Engine.open(config: fixture.config, components: [Position.self, TitleV2.self],
                                     logger: quietLogger, options: fixture.options)
        #expect(engine.world.get(TitleV2.self, for: engine.world.entities[0]) == TitleV2(text: "t", subtitle: "s"))
        #expect(engine.world.get(Position.self, for: engine.world.entities[0]) == Position(x: 2, y: 1))
        try engine.shutdown()
    }

    /// Base rows are decoded a run at a time: a row that does not decode costs its own
    /// value only, whichever run it falls in, and its bytes stay in the file.
    @Test func aBaseRowThatDoesNotDecodeCostsOnlyItsOwnValue() throws {
        let fixture = EngineFixture()
        let count = ComponentLoader.run * 2 + 10
        do {
            let engine = try fixture.open()
            for i in 0..<count { engine.world.spawn(Position(x: Float(i), y: 1)) }
            #expect(engine.compactNow())
            try engine.shutdown()
        }
        let damagedNumbers: [Int64] = [5, Int64(ComponentLoader.run) + 7]
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            for number in damagedNumbers {   // too short for two floats
                try db.execute(sql: "UPDATE components SET payload = x'01' WHERE entity_num = ?", arguments: [number])
                #expect(db.changesCount == 1)
            }
        }
        try queue.close()

        let engine = try fixture.open()
        #expect(engine.recovery.loaded.undecodableRows == 2)
        #expect(engine.world.entityCount == count)
        let loaded = engine.world.entities(with: Position.self)
        #expect(loaded.count == count - 2)
        #expect(Set(loaded.map { Int($0.value.x) }) == Set(0..<count).subtracting(damagedNumbers.map { Int($0) - 1 }),
                "entity numbers start at 1; every other value loads")
        try engine.shutdown()
        let kept = try DatabaseQueue(path: fixture.directory.databasePath).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM components WHERE payload = x'01'")
        }
        #expect(kept == 2, "the undecodable rows are kept")
    }

    @Test func aCorruptDatabaseIsSetAsideReportedAndReplaced() throws {
        let fixture = EngineFixture()
        let garbage = Data((0 ..< 64 * 1024).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: fixture.directory.databasePath))
        let engine = try fixture.open()
        let setAside = try #require(engine.recovery.setAsideCorruptFile)
        #expect(FileManager.default.contents(atPath: setAside) == garbage)
        #expect(engine.recovery.description.contains("corrupt"))
        engine.world.spawn(Title("fresh"))
        try engine.shutdown()
        #expect(try fixture.entityCount() == 1)
    }

    @Test func aCrashedDatabaseThatFailsItsIntegrityCheckIsSetAside() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for i in 0 ..< 3000 { engine.world.spawn(Title(String(repeating: "t", count: 40) + "\(i)")) }
            try engine.shutdown()
        }
        // Mark the session as crashed, so the next open runs the integrity check,
        // then scribble over the last data pages of the file (not the schema's: a damaged
        // schema page is another test's).
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { try $0.execute(sql: "UPDATE session_state SET clean_shutdown = 0") }
        try queue.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        let (pages, pageSize) = try queue.read { db in
            (try Int.fetchAll(db, sql: "SELECT pageno FROM dbstat WHERE name <> 'sqlite_schema' ORDER BY pageno DESC LIMIT 24"),
             try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 1024)
        }
        try queue.close()
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: fixture.directory.databasePath))
        for page in pages {
            try handle.seek(toOffset: UInt64((page - 1) * pageSize))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: pageSize))
        }
        try handle.close()

        let engine = try fixture.open()
        #expect(engine.recovery.setAsideCorruptFile != nil)
        #expect(engine.recovery.crashed)
        // Reported by the integrity check, or by SQLite on the first read of a bad page.
        let reason = try #require(engine.recovery.corruption)
        #expect(reason.contains("integrity check failed") || reason.contains("malformed"), "\(reason)")
        // The damage is at the end of the file: what is before it is salvaged.
        let salvage = try #require(engine.recovery.salvage)
        #expect((salvage.rows["entities"] ?? 0) + (salvage.rows["components"] ?? 0) > 0, "\(salvage.description)")
        // The world is what was salvaged: base rows and segment records alike (whichever
        // holds the titles depends on where the damage fell).
        let salvaged = try PersistedComponents.read(fixture.directory.databasePath)
        #expect(engine.world.count(of: Title.self) == salvaged.entities.values.filter { !$0.isEmpty }.count)
        try engine.shutdown()
    }

    @Test func aCorruptPageIsSetAsideOnTheFirstStartAndEveryOtherRowSalvaged() throws {
        // A clean previous session (no integrity check at open) and one damaged leaf of the
        // entities table: the reload reads it, SQLite says "malformed", and the first start
        // sets the file aside (it used to take a second start) and copies every row that is
        // not on that page into the new document.
        let fixture = EngineFixture()
        var ids: [EntityID] = []
        do {
            let engine = try fixture.open()
            for i in 0 ..< 3000 { ids.append(engine.world.id(of: engine.world.spawn(Title("title \(i)")))!) }
            engine.world.setSetting(.string("dark"), for: "theme")
            try engine.shutdown()
        }
        let cells = try damageLeafPage(of: "entities", skip: 2, in: fixture.directory.databasePath)
        #expect(cells > 10)

        let engine = try fixture.open()
        #expect(engine.recovery.setAsideCorruptFile != nil)
        #expect(engine.recovery.corruption?.contains("malformed") == true, "\(engine.recovery.corruption ?? "")")
        let salvage = try #require(engine.recovery.salvage)
        #expect(salvage.rows["entities"] == 3000 - cells, "every entity not on the damaged page: \(salvage.description)")
        #expect(salvage.skipped["entities"] == 1)
        #expect(salvage.lostAtMost["entities"] == Int64(cells), "entity numbers are dense: the count lost is exact")
        #expect(engine.world.entityCount == 3000 - cells)
        #expect(engine.world.count(of: Title.self) == 3000 - cells, "and their components")
        #expect(engine.world.setting("theme") == .string("dark"))
        #expect(engine.recovery.description.contains("salvaged"))
        #expect(engine.recovery.session.crashCount == 1, "the corruption is counted, and the old file's counters carried over")
        #expect(engine.recovery.session.cleanShutdownCount == 1)
        let survivors = ids.filter { engine.world.entity(for: $0) != nil }
        #expect(survivors.count == 3000 - cells)
        try engine.shutdown()
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).entityCount == 3000 - cells)
    }

    /// One damaged overflow page of a segment row used to cost the whole row (up to 700
    /// components, with a line on stderr): the records before the damage are read through
    /// incremental blob I/O and kept, and the report says how many past it were lost.
    @Test func aDamagedOverflowPageOfASegmentCostsOnlyTheRecordsPastIt() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for i in 0 ..< 2000 { engine.world.spawn(Title(String(repeating: "t", count: 60) + "\(i)")) }
            try engine.shutdown()
        }
        let path = fixture.directory.databasePath
        let queue = try DatabaseQueue(path: path)
        let (page, pageSize, rows) = try queue.writeWithoutTransaction { db -> (Int, Int, Int) in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            let pages = try Int.fetchAll(db, sql: "SELECT pageno FROM dbstat WHERE name = 'segments' AND pagetype = 'overflow' ORDER BY pageno")
            return (pages[pages.count * 3 / 4], try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 512,
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM segments") ?? 0)
        }
        try queue.close()
        #expect(rows > 1)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64((page - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: pageSize))
        try handle.close()

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let salvage = try #require(engine.recovery.salvage)
        let recovered = salvage.rows["segment records read up to a damaged page"] ?? 0
        let past = salvage.skipped["segment records past a damaged page"] ?? 0
        #expect(recovered > 0, "\(salvage.description)")
        #expect(past > 0, "\(salvage.description)")
        #expect(engine.recovery.loaded.undecodableRows == 0, "no byte of the damaged page taken for a record")
        #expect(engine.world.count(of: Title.self) == 2000 - past, "every title but those past the damage: \(salvage.description)")
        #expect(salvage.description.contains("segment records past a damaged page"))
    }

    /// Entity numbers are never reused, so they grow sparse; a damaged page's range of
    /// numbers then spans far more numbers than rows. The count of rows lost is bounded by
    /// what the table's intact index counts (it used to say "at most 4194305" for a page).
    @Test func rowsLostAreCountedAsRowsNotAsTheNumbersBetween() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for i in 0 ..< 3000 { engine.world.spawn(Title("title \(i)")) }
            #expect(engine.compactNow())   // into base rows: the segments name no number any more
            try engine.shutdown()
        }
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            // Through negatives: no number meets another on the way.
            try db.execute(sql: "UPDATE components SET entity_num = -entity_num; UPDATE components SET entity_num = -entity_num * 1000")
            try db.execute(sql: "UPDATE entities SET num = -num; UPDATE entities SET num = -num * 1000")
            try db.execute(sql: "DELETE FROM segments")
        }
        try queue.close()
        let cells = try damageLeafPage(of: "entities", skip: 2, in: fixture.directory.databasePath)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let salvage = try #require(engine.recovery.salvage)
        #expect(salvage.rows["entities"] == 3000 - cells, "\(salvage.description)")
        #expect(salvage.lostAtMost["entities"] == Int64(cells), "the index counts the rows: \(salvage.description)")
    }

    /// Schema 8 kept the operation log keyed by (node, seq) WITHOUT ROWID, with a unique
    /// index on its ids, and an index of the jobs being processed: schema 9 moves the log
    /// into arrival order with a (node, seq) index and drops both, keeping every row
    /// (schema 14 then moves them into `received_operations`: the file had no node id yet).
    @Test func aSchema8DocumentKeepsItsOperationsAndJobsThroughTheMigration() throws {
        let fixture = EngineFixture()
        let (a, b) = (NodeID(), NodeID())
        let entity = EntityID()
        do {
            let queue = try DatabaseQueue(path: fixture.directory.databasePath)
            try Store.migrator.migrate(queue, upTo: "v8: segment records in format 2")
            try queue.write { db in
                try db.execute(sql: "INSERT INTO entities (num, id, created_at) VALUES (1, ?, 0)", arguments: [entity.withBytes { Data($0) }])
                for (node, seq) in [(a, 1), (a, 2), (a, 3), (b, 1)] {
                    try db.execute(sql: """
                        INSERT INTO operation_log (node, seq, id, timestamp, kind, payload, logged_at) VALUES (?, ?, ?, ?, 'k', x'01', ?)
                        """, arguments: [node.withBytes { Data($0) }, seq, EntityID().withBytes { Data($0) }, seq, seq])
                }
                try db.execute(sql: "INSERT INTO vector_clock (node, seq) VALUES (?, 3)", arguments: [a.withBytes { Data($0) }])
                try db.execute(sql: """
                    INSERT INTO jobs (entity_num, kind, payload, status, attempts, created_at) VALUES (1, 'render', x'', 'processing', 1, 0)
                    """)
                try db.execute(sql: "INSERT INTO session_state (id, clean_shutdown, session_id, started_at) VALUES (1, 1, x'00', 0)")
            }
            try queue.close()
        }
        let engine = try fixture.open()
        #expect(engine.vectorClock[a] == 3 && engine.vectorClock[b] == 1)
        #expect(engine.recovery.interruptedJobs == 1, "found through jobs_claim, without jobs_processing")
        let (version, indexes, rows) = try engine.store.withConnection { db in
            (try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0,
             try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ('local_operations', 'received_operations', 'jobs')
                ORDER BY name
                """),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM operation_log") ?? 0)
        }
        #expect(version == Store.schemaVersion)
        #expect(rows == 4)
        #expect(indexes == ["jobs_claim", "jobs_done", "local_operations_despawns", "received_operations_despawns",
                            "sqlite_autoindex_jobs_1", "sqlite_autoindex_received_operations_1"],
                "this replica's operations keyed by their sequence, no index; the partial indexes of despawns, which no other operation pays for")
        engine.appendOperation(kind: "after", payload: [])
        try engine.shutdown()
        #expect(try fixture.count("SELECT count(*) FROM operation_log") == 5)
    }

    /// Schema 14 keeps this replica's operations in `local_operations`, keyed by their
    /// sequence, and the others' in `received_operations`: a schema 13 document's log is
    /// split by its replica's node id, and goes on from where it was.
    @Test func aSchema13DocumentsOwnOperationsMoveToTheirTable() throws {
        let fixture = EngineFixture()
        let (local, peer) = (NodeID(), NodeID())
        try schema13Document(at: fixture.directory.databasePath, node: local, operations: [
            (local, 1, "k"), (peer, 1, "k"), (local, 2, "strata.despawn"), (peer, 2, "strata.despawn"), (local, 3, "k")])
        let engine = try fixture.open()
        #expect(engine.nodeID == local)
        #expect(engine.vectorClock[local] == 3 && engine.vectorClock[peer] == 2)
        let (mine, theirs, despawns) = try engine.store.withConnection { db in
            (try Int64.fetchAll(db, sql: "SELECT seq FROM local_operations ORDER BY seq"),
             try Int64.fetchAll(db, sql: "SELECT seq FROM received_operations WHERE node = ? ORDER BY seq", arguments: [peer.withBytes { Data($0) }]),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM operation_log WHERE kind = 'strata.despawn'") ?? 0)
        }
        #expect(mine == [1, 2, 3] && theirs == [1, 2])
        #expect(despawns == 2, "the tombstones of both tables, through the view")
        engine.appendOperation(kind: "after", payload: [])
        try engine.shutdown()
        #expect(try fixture.count("SELECT count(*) FROM local_operations WHERE seq = 4 AND kind = 'after'") == 1)
        #expect(try fixture.count("SELECT count(*) FROM operation_log WHERE node = x'\(local.description.replacingOccurrences(of: "-", with: ""))'") == 4)
    }

    /// Schema 17 stores this replica's operations in shorter rows: Strata's kinds as integer
    /// codes, a host's as text, no `logged_at` (the view computes it from the timestamp).
    @Test func aSchema16DocumentsOperationsTakeShorterRowsAndReadTheSame() throws {
        let fixture = EngineFixture()
        let (local, peer, shape) = (NodeID(), NodeID(), EntityID())
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try Store.migrator.migrate(queue, upTo: "v16: spawns wait for compaction too, in one table with the despawns")
        let despawn = [UInt8(1)] + shape.withBytes { Array($0) }
        try queue.write { db in
            try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, 0)", arguments: [local.withBytes { Data($0) }])
            for (seq, kind) in [(1, "note"), (2, ReplicatedOperation.componentKind), (3, ReplicatedOperation.despawnKind)] {
                try db.execute(sql: """
                    INSERT INTO local_operations (seq, id, timestamp, kind, payload, logged_at) VALUES (?, randomblob(16), ?, ?, ?, ?)
                    """, arguments: [seq, Int64(1_700_000_000_000 + seq) << 16, kind, Data(kind == ReplicatedOperation.despawnKind ? despawn : [9]), 1_700_000_000_000 + seq])
            }
            try db.execute(sql: "INSERT INTO session_state (id, clean_shutdown, session_id, started_at) VALUES (1, 1, x'00', 0)")
        }
        try queue.close()

        let engine = try Engine.open(config: fixture.config, components: replicatedTestComponents, logger: quietLogger, options: fixture.options)
        #expect(engine.vectorClock[local] == 3)
        engine.receiveOperation(LoggedOperation(node: peer, seq: 1, timestamp: HybridTimestamp(milliseconds: 5), kind: "chat", payload: [1]))
        engine.appendOperation(kind: "after", payload: [2])
        #expect(engine.flushNow())
        let despawns = try engine.store.readReplicaTombstones()
        let (stored, logged, plan) = try engine.store.withConnection { db in
            (try Row.fetchAll(db, sql: "SELECT seq, typeof(kind) AS type, CAST(kind AS TEXT) AS kind FROM local_operations ORDER BY seq").map { "\($0["seq"] as Int64) \($0["type"] as String) \($0["kind"] as String)" },
             try Row.fetchAll(db, sql: "SELECT seq, kind, logged_at FROM operation_log WHERE node = ? ORDER BY seq", arguments: [local.withBytes { Data($0) }])
                .map { "\($0["seq"] as Int64) \($0["kind"] as String) \(($0["logged_at"] as Int64) - 1_700_000_000_000)" },
             try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT payload FROM local_operations WHERE \(OperationKindCode.despawnSQL)").map { $0["detail"] as String }.joined())
        }
        #expect(stored == ["1 text note", "2 integer 1", "3 integer 2", "4 text after"], "Strata's kinds as codes, a host's as text")
        #expect(Array(logged.prefix(3)) == ["1 note 1", "2 strata.component 2", "3 strata.despawn 3"], "the view reads the kinds and the times back")
        #expect(despawns == [shape], "the tombstone, through the despawns' index")
        #expect(plan.contains("local_operations_despawns"), "\(plan)")
        #expect(try engine.store.withConnection { try Int.fetchOne($0, sql: "SELECT count(*) FROM operation_log WHERE kind = 'chat' AND logged_at > 0") } == 1,
                "received operations keep their own logged_at")
        try engine.shutdown()
    }

    @Test func aCorruptPageOfThisReplicasOperationsCostsOnlyItsOwnOperations() throws {
        // Keyed by their sequence, like the integer-keyed tables: the salvage finds the first
        // sequence past the damaged page and goes on from there; the range it skipped is
        // exactly the page's operations (sequences are dense).
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for i in 0 ..< 3000 { engine.appendOperation(kind: "shape.create", payload: [UInt8(i & 0xFF), 1, 2, 3]) }
            try engine.shutdown()
        }
        let cells = try damageLeafPage(of: "local_operations", skip: 3, in: fixture.directory.databasePath)
        #expect(cells >= 5, "the damaged leaf holds several rows (512-byte pages)")

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.setAsideCorruptFile != nil, "the reload reads the log in key order and finds the damage")
        let salvage = try #require(engine.recovery.salvage)
        #expect(salvage.rows["local_operations"] == 3000 - cells, "\(salvage.description)")
        #expect(salvage.skipped["local_operations"] == 1, "one range of sequences")
        #expect(salvage.lostAtMost["local_operations"] == Int64(cells))
        #expect(salvage.description.contains("rows lost, at most: \(cells) in local_operations"))
        #expect(!salvage.unreadable.contains("local_operations"))
        #expect(engine.recovery.operations.operations == 3000 - cells)
        // The lost numbers may be on the server and other devices already: never used again.
        #expect(engine.recovery.operations.gaps == 0, "this replica cannot refill its own gap")
        let lost = try #require(engine.recovery.operations.vectorClockRepairs.first { $0.contains("this replica's operations") })
        #expect(lost.contains("(\(cells)) are missing") && lost.contains("the next operation is 3001"), "\(lost)")
        #expect(engine.world.operationLog.nextSequence == 3001)
        engine.appendOperation(kind: "after", payload: [])
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT seq FROM local_operations WHERE kind = 'after'") == 3001)
    }

    /// The tail of this replica's operations lost after the server acknowledged it: the next
    /// operation goes above what the server has, not above what the file still holds.
    @Test func thisReplicasNextOperationGoesAboveWhatTheServerAcknowledged() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for i in 0 ..< 10 { engine.appendOperation(kind: "shape.create", payload: [UInt8(i)]) }
            try engine.shutdown()
        }
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO sync_state (id, server, pushed_through) VALUES (1, 'test', 12)")
            try db.execute(sql: "DELETE FROM local_operations WHERE seq > 7")   // as a lost last page would leave it
        }
        try queue.close()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.operationLog.nextSequence == 13)
        #expect(engine.recovery.operations.vectorClockRepairs.contains { $0.contains("operations 8…12 (5) are missing") },
                "\(engine.recovery.operations.vectorClockRepairs)")
    }

    @Test func aCorruptPageOfReceivedOperationsCostsOnlyItsOwnOperations() throws {
        // Found by (node, seq), their unique index: the salvage walks each node's sequence
        // past the damaged page of the table, an operation at a time (the index still names
        // each one).
        let fixture = EngineFixture()
        let peer = NodeID()
        do {
            let engine = try fixture.open()
            for i in 1 ... 3000 {
                engine.receiveOperation(LoggedOperation(node: peer, seq: Int64(i), timestamp: HybridTimestamp(milliseconds: Int64(i)),
                                                        kind: "shape.create", payload: [UInt8(i & 0xFF), 1, 2, 3]))
            }
            try engine.shutdown()
        }
        let cells = try damageLeafPage(of: "received_operations", skip: 3, in: fixture.directory.databasePath)
        #expect(cells >= 5, "the damaged leaf holds several rows (512-byte pages)")

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.setAsideCorruptFile != nil)
        let salvage = try #require(engine.recovery.salvage)
        #expect(salvage.rows["received_operations"] == 3000 - cells, "\(salvage.description)")
        #expect(salvage.skipped["received_operations"] == cells, "each lost operation is known by its key")
        #expect(salvage.lostAtMost["received_operations"] == Int64(cells))
        #expect(engine.recovery.operations.operations == 3000 - cells)
        #expect(engine.recovery.operations.gaps == 1)
    }

    @Test func aSchema13DocumentWhoseOperationLogIsDamagedIsSalvagedIntoBothTables() throws {
        // The migration to schema 14 reads the whole log, so a damaged page of it stops the
        // open: the file is set aside and salvaged from its one `operation_log` table, this
        // replica's operations into `local_operations`, the peer's into `received_operations`.
        let fixture = EngineFixture()
        let (local, peer) = (NodeID(), NodeID())
        try schema13Document(at: fixture.directory.databasePath, node: local,
                             operations: (1 ... 1000).flatMap { seq in [(local, seq, "k"), (peer, seq, "k")] })
        let cells = try damageLeafPage(of: "operation_log", skip: 3, in: fixture.directory.databasePath)
        #expect(cells > 10)

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let salvage = try #require(engine.recovery.salvage)
        let copied = (salvage.rows["local_operations"] ?? 0) + (salvage.rows["received_operations"] ?? 0)
        #expect(copied == 2000 - cells, "\(salvage.description)")
        #expect(engine.nodeID == local)
        let (mine, theirs) = try engine.store.withConnection { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM local_operations") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM received_operations WHERE node = ?", arguments: [peer.withBytes { Data($0) }]) ?? 0)
        }
        #expect(mine + theirs == 2000 - cells && mine >= 1000 - cells && theirs >= 1000 - cells)
        #expect(engine.recovery.operations.operations == 2000 - cells)
    }

    @Test func aCorruptPageOfTheSettingsCostsOnlyItsOwnSettings() throws {
        // Keyed by text: read up to the damaged page, then back from the end down to it.
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for i in 0 ..< 2000 { engine.world.setSetting(.string(String(repeating: "v", count: 60)), for: String(format: "key.%05d", i)) }
            engine.world.spawn(Title("one"))
            try engine.shutdown()
        }
        let cells = try damageLeafPage(of: "settings", skip: 5, in: fixture.directory.databasePath)
        #expect(cells >= 5, "the damaged leaf holds several rows (512-byte pages)")

        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.setAsideCorruptFile != nil, "the reload reads every setting and finds the damage")
        let salvage = try #require(engine.recovery.salvage)
        #expect(salvage.rows["settings"] == 2000 - cells, "\(salvage.description)")
        #expect(salvage.skipped["settings"] == 1)
        #expect(!salvage.unreadable.contains("settings"))
        #expect(engine.world.settings.count == 2000 - cells)
        #expect(engine.world.entityCount == 1)
    }

    @Test func damageAQuietOpenMissesIsFoundWhenIdleAndHandledAtTheNextOpen() throws {
        // A damaged page of the jobs' (entity, kind) index: a clean open never reads it (the
        // interrupted jobs are found by kind), so it does not notice. The idle check does; if
        // the process dies before its next flush replaces the file (StoreReplacementTests),
        // the next open sets the file aside and salvages it.
        var fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 3000)
        try damageLeafPage(of: quietIndex, skip: 2, in: fixture.directory.databasePath)

        fixture.config.persistence.idleAfter = .seconds(60)
        let engine = try fixture.open()
        #expect(engine.recovery.setAsideCorruptFile == nil, "a clean open does not read the index: \(engine.recovery.corruption ?? "")")
        #expect(engine.world.entityCount == 3000)
        engine.noteInput()   // idle detection starts with the host's first input
        #expect(engine.metrics.integrityCheck == nil, "not while the user is active")
        fixture.clock.advance(by: .seconds(61))
        engine.endTick()
        #expect(eventually(timeout: .seconds(120)) { engine.metrics.integrityCheck != nil })
        let found = try #require(engine.metrics.integrityCheck)
        #expect(found != "ok", "the damaged index is found")
        #expect(FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".verify"))
        engine.abandon()

        let next = try fixture.open()
        #expect(next.recovery.setAsideCorruptFile != nil)
        #expect(next.recovery.corruption.map { $0.contains("integrity check failed") || $0.contains("malformed") } == true, "\(next.recovery.corruption ?? "")")
        #expect(next.recovery.salvage?.rows["entities"] == 3000, "the table itself reads whole")
        #expect(next.world.count(of: Title.self) == 3000)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".verify"))
        try next.shutdown()
    }

    /// Mounts `source` read-only at `target` (a bind mount); false where this process may not mount.
    static func mountReadOnly(_ source: String, at target: String) -> Bool {
        let mount = { (arguments: [String]) -> Bool in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/mount")
            process.arguments = arguments
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return false }
            process.waitUntilExit()
            return process.terminationStatus == 0
        }
        try? FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        return mount(["--bind", source, target]) && mount(["-o", "remount,bind,ro", target])
    }

    static func unmount(_ target: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = [target]
        try? process.run()
        process.waitUntilExit()
    }

    /// Whether read-only bind mounts work here (root in a container that allows them, as on
    /// the development machine and CI).
    static let readOnlyMountsWork: Bool = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-ro-probe-\(getpid())")
        try? FileManager.default.createDirectory(at: directory.appendingPathComponent("src"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("ro").path
        guard mountReadOnly(directory.appendingPathComponent("src").path, at: target) else { return false }
        unmount(target)
        return true
    }()

    @Test(.enabled(if: StoreTests.readOnlyMountsWork, "read-only bind mounts need mount privileges"))
    func inspectionReadsADocumentOnReadOnlyMedia() throws {
        // A WAL database opens read-only only if its -shm file exists or can be created:
        // on read-only media SQLite says "unable to open database file". Inspect reads a copy.
        let fixture = EngineFixture()
        let source = fixture.directory.url.appendingPathComponent("media").path
        var config = fixture.config
        config.database.path = source + "/doc.db"
        do {
            let engine = try Engine.open(config: config, components: testComponents, logger: quietLogger, options: fixture.options)
            for i in 0 ..< 40 { engine.world.spawn(Title("title \(i)")) }
            try engine.shutdown()
        }
        // And a file with WAL content nobody checkpointed, as a killed writer leaves it.
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("PRAGMA journal_mode = WAL"); c.execute("PRAGMA wal_autocheckpoint = 0")
            c.execute("CREATE TABLE t (x)"); c.execute("INSERT INTO t VALUES (1)")
            os._exit(0)
            """, source + "/killed.db"]
        try python.run()
        python.waitUntilExit()
        try? FileManager.default.removeItem(atPath: source + "/killed.db-shm")

        let mounted = fixture.directory.url.appendingPathComponent("ro").path
        #expect(StoreTests.mountReadOnly(source, at: mounted))
        defer { StoreTests.unmount(mounted) }
        #expect(!FileManager.default.createFile(atPath: mounted + "/probe", contents: Data()), "the mount is read-only")

        let document = try DatabaseInspection.inspect(path: mounted + "/doc.db")
        #expect(document.readFromCopy)
        #expect(document.path == mounted + "/doc.db", "reported under its own path, not the copy's")
        #expect(document.entityCount == 40)
        #expect(document.cleanShutdown == true)
        #expect(document.text.contains("read from        a copy"))

        let killed = try DatabaseInspection.inspect(path: mounted + "/killed.db")
        #expect(killed.readFromCopy)
        #expect(killed.walBytes > 0)
        #expect(killed.document == "foreign", "its table, which lives only in the WAL, was read: \(killed.documentDetail ?? "")")
        #expect(killed.documentDetail?.contains("t") == true)
    }

    @Test func twoSetAsidesInOneSecondDoNotCollide() throws {
        let fixture = EngineFixture()
        let location = StoreLocation(path: fixture.directory.databasePath)
        try Data("one".utf8).write(to: URL(fileURLWithPath: location.path))
        let first = try Repair.setAside(location)
        try Data("two".utf8).write(to: URL(fileURLWithPath: location.path))
        let second = try Repair.setAside(location)
        #expect(first != second)
        #expect(FileManager.default.contents(atPath: first) == Data("one".utf8))
        #expect(FileManager.default.contents(atPath: second) == Data("two".utf8))
    }

    @Test func inspectionOfAFileWithAHotJournalSaysWhatItIs() throws {
        // A process killed inside a rollback-journal transaction whose pages already spilled
        // into the file leaves a hot journal beside it.
        let fixture = EngineFixture()
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("PRAGMA cache_size = 1")
            c.execute("BEGIN")
            c.execute("CREATE TABLE t (x)")
            for i in range(2000): c.execute("INSERT INTO t VALUES (?)", (os.urandom(200),))
            os._exit(9)
            """, fixture.directory.databasePath]
        try python.run()
        python.waitUntilExit()
        try #require(FileManager.default.fileExists(atPath: fixture.directory.databasePath + "-journal"))
        do {
            _ = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
            Issue.record("a read-only inspection cannot read past a hot journal")
        } catch let error as StoreError {
            #expect(error.message.contains("hot rollback journal"), "\(error)")
        }
        // Opening it as a document rolls the journal back: the file is empty again.
        let engine = try fixture.open()
        #expect(engine.recovery.session.previous == .none)
        try engine.shutdown()
    }

    @Test func inspectionJSONWritesAbsentValuesAsNull() throws {
        let fixture = EngineFixture()
        _ = FileManager.default.createFile(atPath: fixture.directory.databasePath, contents: Data())
        let json = try DatabaseInspection.inspect(path: fixture.directory.databasePath).json()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        for key in DatabaseInspection.nullableKeys {
            #expect(object[key] is NSNull, "\(key) should be null, is \(String(describing: object[key]))")
        }
        #expect(object["document"] as? String == "empty")
    }

    @Test func inspectionJSONHasTheStableKeys() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.world.spawn(Position(x: 1, y: 1), Title("t"))
        try engine.shutdown()
        let json = try DatabaseInspection.inspect(path: fixture.directory.databasePath).json()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        for key in ["journal_mode", "page_size", "schema_version", "wal_bytes", "entity_count", "components",
                    "clean_shutdown", "crash_count", "clean_shutdown_count", "segments", "segment_bytes", "segment_records",
                    "unreadable_segments", "compactions", "compaction_steps", "base_component_rows"] {
            #expect(object[key] != nil, "missing \(key)")
        }
        #expect(object["journal_mode"] as? String == "wal")
        #expect((object["components"] as? [String: Int])?[Title.typeName] == 1)
    }

    /// A file written by a schema-1 build (components keyed by the entity's 16-byte id)
    /// is migrated in place: entities numbered in creation order, every value kept.
    @Test func aVersion1FileIsMigratedWithEveryValue() throws {
        let fixture = EngineFixture()
        let ids = (0 ..< 3).map { _ in EntityID() }
        func payload<C: Component>(_ value: C) -> Data {
            var writer = PayloadWriter()
            value.encode(to: &writer)
            return Data(writer.bytes)
        }
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1: entities, components, session state');
                CREATE TABLE entities (id BLOB PRIMARY KEY NOT NULL CHECK (length(id) = 16), created_at INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE component_types (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                CREATE TABLE components (
                    entity_id BLOB NOT NULL REFERENCES entities(id) ON DELETE CASCADE, type_id INTEGER NOT NULL,
                    version INTEGER NOT NULL, payload BLOB NOT NULL, updated_at INTEGER NOT NULL,
                    PRIMARY KEY (entity_id, type_id)) WITHOUT ROWID;
                CREATE TABLE session_state (id INTEGER PRIMARY KEY CHECK (id = 1), clean_shutdown INTEGER NOT NULL,
                    session_id BLOB NOT NULL, started_at INTEGER NOT NULL, ended_at INTEGER,
                    crash_count INTEGER NOT NULL DEFAULT 0, clean_shutdown_count INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE settings (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID;
                INSERT INTO session_state VALUES (1, 1, x'00000000000000000000000000000000', 0, 1, 2, 7);
                INSERT INTO component_types VALUES (1, 'test.position'), (2, 'test.title'), (3, 'someone.elses');
                PRAGMA user_version = 1;
                """)
            for (i, id) in ids.enumerated() {
                let blob = id.withBytes { Data($0) }
                try db.execute(sql: "INSERT INTO entities VALUES (?, ?)", arguments: [blob, 100 - i])
                try db.execute(sql: "INSERT INTO components VALUES (?, 1, 1, ?, 0)", arguments: [blob, payload(Position(x: Float(i), y: 1))])
                try db.execute(sql: "INSERT INTO components VALUES (?, 2, 1, ?, 0)", arguments: [blob, payload(Title("e\(i)"))])
                try db.execute(sql: "INSERT INTO components VALUES (?, 3, 1, x'0102', 0)", arguments: [blob])
            }
        }
        try queue.close()

        let engine = try fixture.open()
        #expect(engine.recovery.session.previous == .clean)
        #expect(engine.recovery.session.crashCount == 2)
        #expect(engine.recovery.loaded.entities == 3)
        #expect(engine.recovery.loaded.unknownTypeRows == 3)
        for (i, id) in ids.enumerated() {
            let e = try #require(engine.world.entity(for: id))
            #expect(engine.world.get(Position.self, for: e) == Position(x: Float(i), y: 1))
            #expect(engine.world.get(Title.self, for: e) == Title("e\(i)"))
        }
        try engine.shutdown()
        let numbers = try DatabaseQueue(path: fixture.directory.databasePath).read { db in
            try Row.fetchAll(db, sql: "SELECT num, id FROM entities ORDER BY num").map { row in
                (row["num"] as Int64, (row["id"] as Data).withUnsafeBytes { EntityID(bytes: $0)! })
            }
        }
        #expect(numbers.map(\.1) == ids.reversed(), "numbered in creation order")
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.schemaVersion == Store.schemaVersion)
        #expect(inspection.components["someone.elses"] == 3, "rows of unknown types migrate too")
    }

    @Test func inspectingAMissingFileIsAnError() {
        #expect(throws: StoreError.self) { try DatabaseInspection.inspect(path: "/nonexistent/x.db") }
    }
}

@Suite struct ReloadEdgeTests {
    @Test func entityRowsThatCannotBeLoadedAreCountedAndKept() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for x in 0 ..< 3 { engine.world.spawn(Position(x: Float(x), y: 0)) }
            #expect(engine.compactNow())   // into base rows
            try engine.shutdown()
        }
        // Damage as a bad disk or another tool could leave it: an id of 3 bytes, and a base
        // row of an entity number that has no row.
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try db.execute(sql: "INSERT INTO entities (num, id, created_at) VALUES (100, x'010203', 0)")
            try db.execute(sql: """
                INSERT INTO components (entity_num, type_id, version, payload, updated_at)
                SELECT 500, type_id, version, payload, updated_at FROM components LIMIT 1
                """)
        }
        try queue.close()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.entityCount == 3)
        #expect(engine.recovery.loaded.malformedEntityRows == 1, "\(engine.recovery)")
        #expect(engine.recovery.loaded.orphanRows == 1, "\(engine.recovery)")
        #expect(engine.recovery.description.contains("kept 1 entity rows with a malformed or repeated id or number"), "\(engine.recovery)")
        #expect(engine.recovery.description.contains("kept 1 component rows of no entity"), "\(engine.recovery)")
    }

    /// A kept orphan row (or malformed entity row) names a number no new entity gets: the
    /// next spawn would adopt the orphan's components, and the warning about it would go.
    @Test func aKeptOrphanRowIsNeverAdoptedByANewEntity() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            for x in 0 ..< 3 { engine.world.spawn(Position(x: Float(x), y: 0)) }
            #expect(engine.compactNow())
            try engine.shutdown()
        }
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            // The number right after the last entity's: the one the next spawn used to get.
            try db.execute(sql: """
                INSERT INTO components (entity_num, type_id, version, payload, updated_at)
                SELECT (SELECT max(num) FROM entities) + 1, type_id, version, payload, updated_at FROM components LIMIT 1
                """)
        }
        try queue.close()
        do {
            let engine = try fixture.open()
            #expect(engine.recovery.loaded.orphanRows == 1)
            let fresh = engine.world.spawn(Title("new"))
            #expect(engine.world.get(Position.self, for: fresh) == nil)
            try engine.shutdown()
        }
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.entityCount == 4)
        #expect(engine.world.count(of: Position.self) == 3, "the new entity did not adopt the orphan's position")
        #expect(engine.recovery.loaded.orphanRows == 1, "the orphan is still kept and still reported: \(engine.recovery)")
    }
}

/// Entity numbers read from disk past the highest a file may hold (a damaged page, another
/// tool) are kept and reported, and counting on from them never overflows.
@Suite struct EntityNumberBoundTests {
    @Test func numbersPastTheHighestAreKeptReportedAndNeverCountedOn() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            engine.world.spawn(Title("a"))
            #expect(engine.flushNow())
            #expect(engine.compactNow())
            try engine.shutdown()
        }
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO entities (num, id, created_at) VALUES (9223372036854775807, randomblob(16), 0)")
            try db.execute(sql: "INSERT INTO pending_entities (num, id, created_at) VALUES (9223372036854775806, randomblob(16), 0)")
            try db.execute(sql: "INSERT INTO pending_entities (num) VALUES (9223372036854775805)")
        }
        try queue.close()
        var engine = try fixture.open()
        #expect(engine.world.entityCount == 1)
        #expect(engine.recovery.loaded.malformedEntityRows == 2, "\(engine.recovery)")
        #expect(engine.world.nextEntityNumber <= World.highestEntityNumber)
        let b = engine.world.spawn(Title("b"))
        let bID = engine.world.id(of: b)!
        #expect(engine.flushNow())
        #expect(engine.compactNow())
        try engine.shutdown()

        engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.entityCount == 2)
        #expect(engine.world.get(Title.self, for: try #require(engine.world.entity(for: bID))) == Title("b"))
    }
}

/// Sequence numbers read from disk past the highest a log may hold are damage, never
/// counted on; a large gap the server reports is skipped without walking every number in it.
@Suite struct SequenceBoundTests {
    func document(_ fixture: EngineFixture, _ damage: String) throws -> NodeID {
        let node: NodeID
        do {
            let engine = try fixture.open()
            for _ in 0 ..< 3 { engine.appendOperation(kind: "k", payload: []) }
            #expect(engine.flushNow())
            node = engine.nodeID
            try engine.shutdown()
        }
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in try db.execute(sql: damage, arguments: [node.withBytes { Data($0) }]) }
        try queue.close()
        return node
    }

    @Test func numbersPastTheHighestAreNotCountedOn() throws {
        let fixture = EngineFixture()
        _ = try document(fixture, """
            INSERT INTO local_operations (seq, id, timestamp, kind, payload) VALUES (9223372036854775807, randomblob(16), 1, 'k', x'');
            INSERT INTO operation_floor (node, seq) VALUES (randomblob(16), 9223372036854775807);
            INSERT INTO sync_state (id, server, pushed_through) VALUES (1, 'x', 9223372036854775000);
            SELECT ?
            """)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.operationLog.nextSequence == 4)
        #expect(engine.appendOperation(kind: "k", payload: []).seq == 4)
    }

    @Test func aLargeGapIsSkippedWithoutWalkingIt() throws {
        let fixture = EngineFixture()
        _ = try document(fixture, "INSERT INTO sync_state (id, server, pushed_through) VALUES (1, 'x', \(Int64(1) << 61)); SELECT ?")
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.operationLog.nextSequence == (Int64(1) << 61) + 1)
        #expect(engine.recovery.description.contains("4…\(Int64(1) << 61)"), "\(engine.recovery)")
    }

    /// A parked operation below such a gap: its hole closes with the rest (the clock would
    /// keep every number above it), and its replay still logs it.
    @Test func aParkedOperationBelowALargeGapIsLoggedByItsReplay() throws {
        let fixture = EngineFixture()
        let node = try document(fixture, """
            INSERT INTO sync_state (id, server, pushed_through) VALUES (1, 'x', \(Int64(1) << 61));
            INSERT INTO rejected_writes (rejected_at, error, kind, entity, name, number, payload, operation_id, timestamp)
            VALUES (0, 'refused', 'operation', ?1, 'k', 4, x'01', randomblob(16), 1)
            """)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.world.operationLog.nextSequence == (Int64(1) << 61) + 1)
        #expect(engine.recovery.description.contains("counted as logged too"), "\(engine.recovery)")
        let report = try engine.replayRejectedWrites()
        #expect(report.replayed == 1, "\(report.kept)")
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM local_operations WHERE seq = 4") == 1)
        _ = node
    }
}

/// A clean start checks the tables it does not read once the file's last check is old
/// (`[maintenance] start_check_secs`): damage there is found before a job or a sync needs it.
@Suite struct StartCheckTests {
    func damagedQuietIndex(_ fixture: EngineFixture, lastCheckAgoMs: Int64?) throws {
        try writeTitlesAndOperations(fixture, count: 3000)
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: "UPDATE session_state SET last_check_at = ?",
                           arguments: [lastCheckAgoMs.map { unixMilliseconds() - $0 }])
        }
        try queue.close()
        _ = try damageLeafPage(of: quietIndex, skip: 2, in: fixture.directory.databasePath)
    }

    @Test func damageInATableTheStartDoesNotReadIsFoundOnceTheLastCheckIsOld() throws {
        let fixture = EngineFixture()
        try damagedQuietIndex(fixture, lastCheckAgoMs: 2 * 86_400_000)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        // The session reported is the new file's; the damaged one is set aside.
        #expect(engine.recovery.setAsideCorruptFile != nil, "\(engine.recovery)")
        #expect(engine.recovery.corruption?.contains("jobs") == true, "\(engine.recovery.corruption ?? "")")
        #expect(engine.world.entityCount == 3000, "the world is salvaged whole")
    }

    @Test func aRecentCheckIsNotRepeatedAndAPassingOneIsRecorded() throws {
        let fixture = EngineFixture()
        try damagedQuietIndex(fixture, lastCheckAgoMs: 60_000)
        do {
            let engine = try fixture.open()
            #expect(!engine.recovery.session.checkedUnreadTables, "checked a minute ago")
            #expect(engine.recovery.setAsideCorruptFile == nil)
            engine.abandon()
        }
        // A healthy file past the age: checked, passes, and the time is kept.
        let healthy = EngineFixture()
        try writeTitlesAndOperations(healthy, count: 10)
        let queue = try DatabaseQueue(path: healthy.directory.databasePath)
        try queue.write { try $0.execute(sql: "UPDATE session_state SET last_check_at = NULL") }
        try queue.close()
        let engine = try healthy.open()
        #expect(engine.recovery.session.checkedUnreadTables)
        #expect(engine.recovery.session.integrity == "ok")
        try engine.shutdown()
        let stored = try healthy.count("SELECT count(*) FROM session_state WHERE last_check_at > ?", [unixMilliseconds() - 60_000])
        #expect(stored == 1)
    }
}

/// A document of schema 13 (one `operation_log` table) whose replica is `node`, with
/// `operations` (node, seq, kind) and a clean session.
private func schema13Document(at path: String, node: NodeID, operations: [(NodeID, Int, String)]) throws {
    let queue = try DatabaseQueue(path: path)
    try Store.migrator.migrate(queue, upTo: "v13: history: the flushes of the window, despawned entities kept while it holds them")
    try queue.write { db in
        try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, 0)", arguments: [node.withBytes { Data($0) }])
        for (node, seq, kind) in operations {
            try db.execute(sql: """
                INSERT INTO operation_log (node, seq, id, timestamp, kind, payload, logged_at) VALUES (?, ?, ?, ?, ?, x'0102', ?)
                """, arguments: [node.withBytes { Data($0) }, seq, EntityID().withBytes { Data($0) }, seq, kind, seq])
        }
        try db.execute(sql: "INSERT INTO session_state (id, clean_shutdown, session_id, started_at) VALUES (1, 1, x'00', 0)")
    }
    try queue.close()
}

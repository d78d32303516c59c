import Foundation
import Synchronization
import GRDB
import GRDBSQLite
import Testing
@testable import Strata
import StrataTesting

/// Never drop a batch: rows a commit rejects for good are isolated and parked; the rest of
/// their batch commits; parked rows can be read and replayed.
@Suite struct RejectedWritesTests {
    /// A fixture whose connection refuses any string or blob longer than `limit` bytes
    /// (SQLITE_TOOBIG: a permanent error, like a constraint).
    func fixture(limit: Int32?, _ name: String = #function) -> EngineFixture {
        var fixture = EngineFixture(name)
        if let limit {
            fixture.options.prepareConnection = { db in _ = sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, limit) }
        }
        return fixture
    }

    @Test func oneRowTooBigIsParkedAndTheRestOfItsBatchCommits() throws {
        var fixture = fixture(limit: 16 * 1024)
        let engine = try fixture.open()
        var ids: [EntityID] = []
        for i in 0 ..< 200 { ids.append(engine.world.id(of: engine.world.spawn(Title("shape \(i)")))!) }
        let big = engine.world.spawn(Title(String(repeating: "x", count: 40_000)))
        engine.world.setSetting(.string("small"), for: "theme")
        #expect(engine.flushNow())

        let metrics = engine.metrics
        #expect(metrics.rejectedRows == 1)
        #expect(metrics.rejectedRowsInSideFile == 1, "the row is too big for rejected_writes as well")
        #expect(metrics.lostRows == 0)
        let rejected = try engine.rejectedWrites()
        #expect(rejected.count == 1)
        #expect(rejected.first?.kind == .component)
        #expect(rejected.first?.name == Title.typeName)
        #expect(rejected.first?.entity == engine.world.id(of: big))
        #expect(rejected.first?.error.contains("too big") == true)
        try engine.shutdown()

        // Everything else of the batch is in the file: 201 entities, 200 titles, the setting.
        #expect(try fixture.entityCount() == 201)
        #expect(try fixture.componentCount(Title.self) == 200)
        #expect(try fixture.count("SELECT count(*) FROM settings WHERE key = 'theme'") == 1)

        // Once the cause is gone (here: the limit), the row is replayed and written.
        fixture.options.prepareConnection = nil
        let next = try fixture.open()
        #expect(try next.rejectedWrites().count == 1, "parked rows survive the session")
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).rejectedWritesInSideFile == 1)
        let report = try next.replayRejectedWrites()
        #expect(report.replayed == 1)
        #expect(report.kept.isEmpty)
        #expect(next.flushNow())
        #expect(try next.rejectedWrites().isEmpty)
        try next.shutdown()
        #expect(try fixture.componentCount(Title.self) == 201)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".rejected"))
    }

    @Test func aRowAConstraintRejectsIsParkedInTheDatabase() throws {
        // A trigger that refuses one key: SQLITE_CONSTRAINT, which no retry can fix.
        var fixture = EngineFixture()
        try fixture.open().shutdown()   // the schema first: the trigger needs its table
        fixture.options.prepareConnection = { db in
            try db.execute(sql: """
                CREATE TEMP TRIGGER refuse_key BEFORE INSERT ON settings WHEN NEW.key = 'forbidden'
                BEGIN SELECT RAISE(ABORT, 'this key is refused'); END
                """)
        }
        let engine = try fixture.open()
        for i in 0 ..< 20 { engine.world.spawn(Title("t\(i)")) }
        engine.world.setSetting(.string("no"), for: "forbidden")
        engine.world.setSetting(.string("yes"), for: "allowed")
        #expect(engine.flushNow())
        let rejected = try engine.rejectedWrites()
        #expect(rejected.map(\.kind) == [.setting])
        #expect(rejected.first?.name == "forbidden")
        #expect(rejected.first?.id != nil, "parked in rejected_writes")
        #expect(rejected.first?.error.contains("this key is refused") == true)
        #expect(engine.metrics.rejectedRows == 1)
        #expect(engine.metrics.rejectedRowsInSideFile == 0)
        try engine.shutdown()
        #expect(try fixture.count("SELECT count(*) FROM rejected_writes") == 1)
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).rejectedWrites == 1)
        #expect(try fixture.count("SELECT count(*) FROM settings WHERE key = 'allowed'") == 1)
        #expect(try fixture.componentCount(Title.self) == 20)
    }

    @Test func parkedOperationsClockRowsAndAcknowledgementsAreReplayedAsTheyWere() throws {
        // Triggers refuse one operation, the clock row that covers it and one acknowledgement.
        // Once they are gone, the replay logs the operation again under its own id, sequence
        // and timestamp, and writes the clock and the acknowledgement.
        var fixture = EngineFixture()
        try fixture.open().shutdown()
        fixture.options.prepareConnection = { db in
            try db.execute(sql: """
                CREATE TEMP TRIGGER refuse_operation BEFORE INSERT ON local_operations WHEN NEW.kind = 'shape.refused'
                BEGIN SELECT RAISE(ABORT, 'this operation is refused'); END;
                CREATE TEMP TRIGGER refuse_clock BEFORE INSERT ON vector_clock WHEN NEW.seq = 3
                BEGIN SELECT RAISE(ABORT, 'this clock is refused'); END;
                CREATE TEMP TRIGGER refuse_ack BEFORE INSERT ON peer_acks WHEN NEW.seq = 99
                BEGIN SELECT RAISE(ABORT, 'this acknowledgement is refused'); END;
                """)
        }
        let peer = NodeID()
        var refused: LoggedOperation?
        do {
            let engine = try fixture.open()
            engine.appendOperation(kind: "shape.create", payload: [1])
            refused = engine.appendOperation(kind: "shape.refused", payload: [2, 2])
            engine.appendOperation(kind: "shape.move", payload: [3])
            engine.recordAcknowledgement(from: peer, clock: [engine.nodeID: 99])
            #expect(engine.flushNow())
            let kinds = Set(try engine.rejectedWrites().map(\.kind))
            #expect(kinds == [.operation, .vectorClock, .peerAck])
            let parked = try #require(try engine.rejectedWrites().first { $0.kind == .operation })
            #expect(parked.operationID == refused?.id)
            #expect(parked.timestamp == refused?.timestamp.rawValue)
            try engine.shutdown()
        }
        fixture.options.prepareConnection = nil
        let engine = try fixture.open()
        #expect(engine.recovery.operations.gaps == 1, "seq 2 is missing from the log")
        #expect(!engine.recovery.operations.vectorClockRepairs.contains { $0.contains("are missing") }, "parked, not lost")
        #expect(engine.world.operationLog.nextSequence == 4, "a new operation never takes the parked one's number")
        let report = try engine.replayRejectedWrites()
        #expect(report.replayed == 3, "\(report.kept)")
        #expect(engine.flushNow())
        #expect(try engine.rejectedWrites().isEmpty)
        #expect(engine.operationGaps.isEmpty)
        let node = engine.nodeID
        try engine.shutdown()

        let queue = try fixture.reader()
        try queue.read { db in
            let row = try #require(try Row.fetchOne(db, sql: "SELECT id, timestamp, payload FROM operation_log WHERE kind = 'shape.refused'"))
            #expect((row["id"] as Data).withUnsafeBytes { EntityID(bytes: $0) } == refused?.id)
            #expect(row["timestamp"] as Int64 == refused?.timestamp.rawValue)
            #expect([UInt8](row["payload"] as Data) == [2, 2])
            #expect(try Int64.fetchOne(db, sql: "SELECT seq FROM vector_clock WHERE node = ?", arguments: [node.withBytes { Data($0) }]) == 3)
            #expect(try Int64.fetchOne(db, sql: "SELECT seq FROM peer_acks WHERE peer = ?", arguments: [peer.withBytes { Data($0) }]) == 99)
        }
        try queue.close()
        let reopened = try fixture.open()
        #expect(reopened.recovery.operations.operations == 3)
        #expect(reopened.recovery.operations.gaps == 0)
        #expect(reopened.recovery.operations.vectorClockRepairs.isEmpty)
        try reopened.shutdown()
    }

    @Test func aParkedOperationWithADamagedSequenceStaysParked() throws {
        // A row read from disk: its sequence is checked before the log sees it.
        let fixture = EngineFixture()
        try fixture.open().shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO rejected_writes (rejected_at, error, kind, entity, name, number, payload, operation_id, timestamp)
                VALUES (0, 'refused', 'operation', ?, 'shape.moved', 0, x'01', ?, 1)
                """, arguments: [NodeID().withBytes { Data($0) }, EntityID().withBytes { Data($0) }])
        }
        try queue.close()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let report = try engine.replayRejectedWrites()
        #expect(report.replayed == 0)
        #expect(report.kept.count == 1 && report.kept[0].contains("its sequence 0 is below 1"), "\(report.kept)")
        #expect(try engine.rejectedWrites().count == 1, "kept parked")
    }

    /// An engine whose disk fills for good after a first flush, with three rows waiting:
    /// a moved position, and a spawned entity with its title (`before`: done first).
    func engineOnAFullDisk(before: (EngineFixture) throws -> Void = { _ in }) throws -> (EngineFixture, FaultVFS, Engine, EntityID) {
        var fixture = EngineFixture()
        let vfs = try FaultVFS.register(name: "full-\(UUID().uuidString)")
        fixture.options.vfs = vfs.name
        let engine = try fixture.open()
        let shape = engine.world.spawn(Position(x: 1, y: 1))
        #expect(engine.flushNow())
        try before(fixture)
        vfs.arm(.write, nth: 1, code: FaultVFS.diskFull, persistent: true)
        engine.world.mutate(Position.self, of: shape) { $0.x = 5 }
        let spawned = engine.world.id(of: engine.world.spawn(Title("late")))!
        return (fixture, vfs, engine, spawned)
    }

    @Test func aShutdownThatCannotWriteParksWhatIsLeftInTheSideFile() throws {
        // A disk that stays full through the shutdown: nothing is lost, it is parked, and
        // the next session can put it back.
        var (fixture, vfs, engine, spawned) = try engineOnAFullDisk()
        #expect(throws: StoreError.self) { try engine.shutdown() }
        #expect(engine.metrics.lostRows == 0)
        #expect(engine.metrics.rejectedRowsInSideFile == 3, "the entity row, its title, the moved position")
        vfs.disarm()

        fixture.options.vfs = nil
        let next = try fixture.open()
        #expect(next.recovery.crashed, "the session could not be marked clean")
        let parked = try next.rejectedWrites()
        #expect(parked.map(\.kind) == [.entityInsert, .component, .component])
        #expect(parked.first?.error.contains("full") == true, "\(parked.first?.error ?? "")")
        #expect(next.world.entity(for: spawned) == nil, "the spawn never reached the file")
        #expect(try next.replayRejectedWrites().replayed == 3)
        #expect(next.world.entity(for: spawned).flatMap { next.world.get(Title.self, for: $0) } == Title("late"))
        #expect(next.flushNow())
        try next.shutdown()
        #expect(try fixture.count(persisted: Position(x: 5, y: 1)) == 1)
        #expect(try fixture.count(persisted: Title("late")) == 1)
    }

    /// Requests waiting behind a batch that cannot commit (a full disk) are answered as soon
    /// as a shutdown begins, not after every retry: the shutdown waits on them (its workers
    /// stopping) and used to end long after the run (17 s past a 30 s sim).
    @Test func requestsBehindABatchThatCannotCommitAreAnsweredOnceAShutdownBegins() throws {
        let (_, vfs, engine, _) = try engineOnAFullDisk()
        engine.flush(reason: .explicitSave)
        #expect(eventually { engine.metrics.failedCommits > 0 }, "the batch fails and is held")
        let answered = Mutex<Result<Int, any Error>?>(nil)
        let lane = engine.jobs.lane
        Thread.detachNewThread {
            let result = Result { try lane.perform(.normal, timeout: .seconds(120)) { db in try Int.fetchOne(db, sql: "SELECT 1") } }
            answered.withLock { $0 = result }
        }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(answered.withLock { $0 == nil }, "waiting behind the batch")
        engine.buffer.beginClosing()
        #expect(eventually(timeout: .seconds(10)) { answered.withLock { $0 != nil } }, "answered once the shutdown began")
        if case .success? = answered.withLock({ $0 }) { Issue.record("a request behind a batch that cannot commit cannot succeed") }
        #expect(throws: StoreError.self) { try engine.shutdown() }
        vfs.disarm()
    }

    @Test func aShutdownThatCannotParkSaysWhatWasLost() throws {
        // The disk stays full and the side file cannot be written either (here: a folder
        // stands in its place). The shutdown's error counts the rows lost; it never says
        // "parked" or "nothing lost" for them.
        let (_, vfs, engine, _) = try engineOnAFullDisk { fixture in
            try FileManager.default.createDirectory(atPath: fixture.directory.databasePath + ".rejected", withIntermediateDirectories: false)
        }
        do {
            try engine.shutdown()
            Issue.record("the shutdown reported no error")
        } catch let error as StoreError {
            #expect(error.message.contains("3 LOST"), "\(error)")
            #expect(!error.message.contains("nothing lost"), "\(error)")
            #expect(!error.message.contains("parked in"), "\(error)")
        }
        #expect(engine.metrics.lostRows == 3)
        #expect(engine.metrics.rejectedRowsInSideFile == 0)
        vfs.disarm()
    }

    @Test func aSideFileLineThatDoesNotReadIsKeptThroughAReplay() throws {
        // A crash mid-append leaves a torn last line; the next park starts a line of its own,
        // and a replay puts back what reads and keeps the torn line as it was.
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let path = fixture.directory.databasePath + ".rejected"
        let torn = #"{"error":"disk full","kind":"setti"#
        try Data(torn.utf8).write(to: URL(fileURLWithPath: path))
        let row = RejectedWrite(rejectedAt: 1, error: "disk full", kind: .setting, name: "volume", payload: Array("i:7".utf8))
        let outcome = engine.writer.parkInSideFile([row], because: StoreError(.write, message: "test", path: path))
        #expect(outcome == ParkOutcome(parked: 1, lost: 0, path: path, failure: nil))

        #expect(try engine.rejectedWrites().map(\.name) == ["volume"])
        let report = try engine.replayRejectedWrites()
        #expect(report.replayed == 1, "\(report)")
        #expect(report.kept.count == 1 && report.kept[0].contains("does not read"), "\(report)")
        #expect(engine.world.setting("volume") == .integer(7))
        let left = try String(contentsOfFile: path, encoding: .utf8)
        #expect(left == torn + "\n", "the torn line, and only it")
    }

    /// A side-file line that does not read is kept, and said: at open, by `strata inspect` and
    /// by `strata doctor` (it used to be kept without a word until a replay).
    @Test func aSideFileLineThatDoesNotReadIsSaidAtOpenAndByTheTools() throws {
        let fixture = EngineFixture()
        try fixture.open().shutdown()
        let path = fixture.directory.databasePath + ".rejected"
        try Data(#"{"error":"disk full","kind":"setti"#.utf8).write(to: URL(fileURLWithPath: path))
        let engine = try fixture.open()
        #expect(engine.recovery.unreadableSideFileLines == 1)
        #expect(engine.recovery.description.contains("1 lines of the parked rows' side file do not read"), "\(engine.recovery)")
        try engine.shutdown()
        let inspect = try ChildProcess.strata(["inspect", fixture.directory.databasePath])
        #expect(inspect.stdout.contains("1 lines there do not read"), "\(inspect.stdout)")
        let report = try DoctorReport.examine(path: fixture.directory.databasePath)
        #expect(report.unreadableSideFileLines == 1)
        #expect(report.findings.contains { $0.subject == "rejected_writes" && $0.detail.contains("do not read") }, "\(report.findings)")
        #expect(FileManager.default.fileExists(atPath: path), "kept")
    }
}

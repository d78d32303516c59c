import Foundation
import GRDB
import Testing
@testable import Strata

/// The history window on real files and the real writer, in virtual wall-clock time.
@Suite struct HistoryTests {
    func fixture(keep: Duration, _ name: String = #function) -> (EngineFixture, TestWallClock) {
        var fixture = EngineFixture(name)
        let wall = TestWallClock()
        fixture.options.wallClock = { wall.milliseconds }
        fixture.config.history.keep = keep
        return (fixture, wall)
    }

    func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// Flushes, and returns the flush's time.
    func flush(_ engine: Engine, _ wall: TestWallClock) -> Int64 {
        #expect(engine.flushNow())
        return wall.milliseconds
    }

    @Test func theWorldAtAnyFlushOfTheWindowIsRebuilt() throws {
        let (fixture, wall) = fixture(keep: .seconds(60))
        let engine = try fixture.open()
        let a = engine.world.spawn(Title("a0"))
        let b = engine.world.spawn(Title("b0"), Position(x: 1, y: 1))
        let idA = try #require(engine.world.id(of: a)), idB = try #require(engine.world.id(of: b))
        let t0 = flush(engine, wall)

        wall.advance(by: .seconds(1))
        engine.world.insert(Title("a1"), for: a)
        engine.world.despawn(b)
        let c = engine.world.spawn(Title("c1"))
        let idC = try #require(engine.world.id(of: c))
        let t1 = flush(engine, wall)

        wall.advance(by: .seconds(1))
        engine.world.insert(Title("a2"), for: a)
        let t2 = flush(engine, wall)
        wall.advance(by: .seconds(1))

        let w0 = try engine.world(at: date(t0))
        #expect(w0.entity(for: idA).flatMap { w0.get(Title.self, for: $0) } == Title("a0"))
        #expect(w0.entity(for: idB).flatMap { w0.get(Title.self, for: $0) } == Title("b0"))
        #expect(w0.entity(for: idB).flatMap { w0.get(Position.self, for: $0) } == Position(x: 1, y: 1))
        #expect(w0.entity(for: idC) == nil)
        let w1 = try engine.world(at: date(t1 + 500))   // between two flushes: the world of the earlier
        #expect(w1.entity(for: idA).flatMap { w1.get(Title.self, for: $0) } == Title("a1"))
        #expect(w1.entity(for: idB) == nil)
        #expect(w1.entity(for: idC).flatMap { w1.get(Title.self, for: $0) } == Title("c1"))
        #expect(try engine.world(at: date(t2)).digest() == engine.world.digest())

        let window = try engine.history()
        #expect(window.flushes.map(\.atMilliseconds) == [t0, t1, t2])
        #expect(window.flushes[1].spawns == 1 && window.flushes[1].despawns == 1)
        #expect(window.startMilliseconds == t0)
        #expect(throws: HistoryError.self, "before the window") { try engine.world(at: date(t0 - 1)) }
        #expect(throws: HistoryError.self, "after now") { try engine.world(at: date(wall.milliseconds + 1000)) }
        do {
            _ = try engine.world(at: date(t0 - 1000))
        } catch let error as HistoryError {
            #expect("\(error)".contains(HistoryError.format(t0)), "the error names the window's start")
        }
        let snapshot = try DocumentHistory.snapshot(path: engine.store.location.path, at: t0, now: wall.milliseconds)
        #expect(snapshot.digest == w0.digest())
        #expect(snapshot.entityCount == 2)
        try engine.shutdown()
    }

    /// Without `[history]` a spawn's time is not written (0: no bytes); a window opened
    /// later counts those entities as there from before it, at any time it holds.
    @Test func entitiesSpawnedWithoutHistoryAreThereThroughoutALaterWindow() throws {
        var (fixture, wall) = fixture(keep: .zero)
        var engine = try fixture.open()
        // One spawn waits in `pending_entities`; a hundred in one commit go to `entities` at once.
        let waiting = engine.world.spawn(Title("waiting"))
        #expect(engine.flushNow())
        let ids = [try #require(engine.world.id(of: waiting))] + (0 ..< 100).compactMap { engine.world.id(of: engine.world.spawn(Title("t\($0)"))) }
        #expect(engine.flushNow())
        #expect(try fixture.count("SELECT count(*) FROM pending_entities") == 1)
        let times = try engine.store.queue.read { db in
            try Int64.fetchAll(db, sql: "SELECT created_at FROM entities UNION ALL SELECT created_at FROM pending_entities WHERE id IS NOT NULL")
        }
        #expect(times.count == ids.count && times.allSatisfy { $0 == 0 }, "\(times.prefix(4))")
        try engine.shutdown()

        wall.advance(by: .seconds(10))
        fixture.config.history.keep = .seconds(60)
        engine = try fixture.open()
        let later = engine.world.spawn(Title("later"))
        let laterID = try #require(engine.world.id(of: later))
        let t0 = flush(engine, wall)
        let kept = try engine.store.queue.read { db in
            try Int64.fetchAll(db, sql: "SELECT created_at FROM entities WHERE created_at > 0")
        }
        #expect(kept == [t0], "with history, the spawn's time is written")
        wall.advance(by: .seconds(1))
        let w0 = try engine.world(at: date(t0))
        for id in ids { #expect(w0.entity(for: id) != nil) }
        #expect(w0.entity(for: laterID) != nil)
        try engine.shutdown()
    }

    @Test func compactionFoldsOnlyWhatIsOlderThanTheWindowAndKeepsDespawnedEntities() throws {
        let (fixture, wall) = fixture(keep: .seconds(10))
        let engine = try fixture.open()
        let title = engine.world.spawn(Title("t0"))
        let doomed = engine.world.spawn(Title("x0"), Position(x: 0, y: 0))
        let idDoomed = try #require(engine.world.id(of: doomed))
        var digests: [Int64: WorldDigest] = [:]
        var times: [Int64] = []
        for second in 1 ... 20 {
            wall.advance(by: .seconds(1))
            engine.world.insert(Title("t\(second)"), for: title)
            if second == 3 || second == 12 { engine.world.insert(Position(x: Float(second), y: 0), for: doomed) }
            if second == 15 { engine.world.despawn(doomed) }
            let at = flush(engine, wall)
            times.append(at)
            digests[at] = engine.world.digest()
        }
        #expect(engine.compactNow())
        let window = try engine.history()
        let now = wall.milliseconds
        #expect(window.startMilliseconds >= now - 10_000 - 1000 && window.startMilliseconds <= now - 10_000,
                "folded up to the window, not into it")
        #expect(try fixture.count("SELECT count(*) FROM segments WHERE created_at >= ?", [now - 10_000]) >= 10)
        for at in times where at >= window.startMilliseconds {
            #expect(try engine.world(at: date(at)).digest() == digests[at], "the world at \(at - times[0])")
        }
        let beforeDespawn = try engine.world(at: date(times[13]))   // second 14: x was despawned at 15
        #expect(beforeDespawn.entity(for: idDoomed).flatMap { beforeDespawn.get(Position.self, for: $0) } == Position(x: 12, y: 0))
        #expect(throws: HistoryError.self) { try engine.world(at: date(times[0])) }

        // The window moves on: the despawned entity's kept rows go once it is behind the start.
        wall.advance(by: .seconds(30))
        engine.world.insert(Title("later"), for: title)
        _ = flush(engine, wall)
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM despawned_entities") == 0)
        #expect(try fixture.count("SELECT count(*) FROM despawned_components") == 0)
        try engine.shutdown()
    }

    @Test func aRewindIsDurableAndInTheHistoryItself() throws {
        let (fixture, wall) = fixture(keep: .seconds(600))
        let engine = try fixture.open()
        let kept = engine.world.spawn(Title("kept"), Position(x: 1, y: 1))
        let gone = engine.world.spawn(Title("despawned later"))
        let idGone = try #require(engine.world.id(of: gone))
        let t0 = flush(engine, wall)
        let then = engine.world.digest()

        wall.advance(by: .seconds(5))
        engine.world.insert(Title("changed"), for: kept)
        engine.world.remove(Position.self, from: kept)
        engine.world.despawn(gone)
        engine.world.spawn(Title("new"))
        let t1 = flush(engine, wall)
        let after = engine.world.digest()

        wall.advance(by: .seconds(5))
        let report = try engine.rewind(to: date(t0))
        #expect(report.despawned == 1 && report.spawned == 1 && report.set >= 2 && report.removed == 0)
        #expect(engine.world.digest() == then)
        #expect(engine.world.entity(for: idGone) != nil, "spawned again with its id")
        let t2 = flush(engine, wall)
        try engine.shutdown()

        let reopened = try fixture.open()
        #expect(reopened.world.digest() == then, "the rewind was flushed like any change")
        #expect(try reopened.world(at: date(t1)).digest() == after, "the rewound-over flush is still in the window")
        #expect(try reopened.world(at: date(t2)).digest() == then)
        try reopened.rewind(to: date(t1))
        #expect(reopened.world.digest() == after, "a rewind can be rewound")
        try reopened.shutdown()
    }

    @Test func withoutHistoryItSaysSo() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.world.spawn(Title("x"))
        #expect(engine.flushNow())
        #expect(throws: HistoryError.self) { try engine.world(at: Date()) }
        #expect(throws: HistoryError.self) { try engine.history() }
        #expect(try fixture.count("SELECT count(*) FROM history_flushes") == 0)
        try engine.shutdown()
    }
    @Test func theSizeCapFoldsTheOldestFlushesAndTheWindowStartsLater() throws {
        var (fixture, wall) = fixture(keep: .seconds(3600))
        fixture.config.history.maxBytes = 1 << 20
        let engine = try fixture.open()
        let entities = (0 ..< 100).map { engine.world.spawn(Title("\($0)")) }
        var flushes: [(at: Int64, digest: WorldDigest)] = []
        for round in 1 ... 30 {
            wall.advance(by: .seconds(1))
            let text = String(repeating: "\(round % 10)", count: 500)   // 50 KB of records a flush
            for entity in entities { engine.world.insert(Title(text, revision: round), for: entity) }
            #expect(engine.flushNow())
            flushes.append((wall.milliseconds, engine.world.digest()))
        }
        #expect(try fixture.count("SELECT sum(length(records)) FROM segments") > 1 << 20, "more than the cap, before compaction")
        #expect(engine.compactNow())
        let window = try engine.history()
        #expect(window.startMilliseconds > flushes[0].at, "the oldest flushes were folded, an hour of keep_secs or not")
        #expect(try fixture.count("SELECT sum(length(records)) FROM segments") <= (1 << 20) + 70_000)
        #expect(try fixture.count("SELECT sum(length(records)) FROM segments") >= (1 << 20) - 70_000, "no more than the cap asks")
        for flush in flushes where flush.at >= window.startMilliseconds {
            #expect(try engine.world(at: date(flush.at)).digest() == flush.digest)
        }
        try engine.shutdown()
    }

    @Test func aWindowLargerThanTheDiskIsSaidAtOpen() throws {
        var (fixture, _) = fixture(keep: .seconds(600))
        fixture.config.history.maxBytes = 64 << 20
        fixture.options.freeDiskSpace = { _ in 10 << 20 }
        let log = CapturedLog()
        let engine = try Engine.open(config: fixture.config, components: testComponents, logger: log.logger, options: fixture.options)
        #expect(log.messages.contains { $0.contains("max_mb (64 MB) is more than the disk has free (10 MB)") })
        try engine.shutdown()
    }

    @Test func timesAreReadAsPeopleWriteThem() throws {
        let now: Int64 = 1_800_000_000_000
        #expect(try HistoryTime.parse("-30s", now: now) == now - 30_000)
        #expect(try HistoryTime.parse("-5m", now: now) == now - 300_000)
        #expect(try HistoryTime.parse("-2h", now: now) == now - 7_200_000)
        #expect(try HistoryTime.parse("-1500ms", now: now) == now - 1500)
        #expect(try HistoryTime.parse("-0.5s", now: now) == now - 500)
        #expect(try HistoryTime.parse("2027-01-15T08:00:00Z", now: now) == 1_800_000_000_000)
        #expect(try HistoryTime.parse("2027-01-15T08:00:00.250Z", now: now) == 1_800_000_000_250)
        for bad in ["yesterday", "-5x", "--5s", "", "-s"] {
            #expect(throws: HistoryError.self, "\(bad)") { try HistoryTime.parse(bad, now: now) }
        }
    }

    /// Numbers past what a document can hold are refused by name, before any conversion
    /// (`-9.2e18s` used to trap converting to Int64; `-9e15s` printed a year without its sign).
    @Test func timesBefore1970OrPastTheYear9999AreRefusedNotConverted() throws {
        let now: Int64 = 1_800_000_000_000
        for far in ["-9.2e18s", "-9e15s", "-1e300d", "-1801000000s", "0001-01-01T00:00:00Z"] {
            #expect(throws: HistoryError.timeOutOfRange(far), "\(far)") { try HistoryTime.parse(far, now: now) }
        }
        #expect(try HistoryTime.parse("-1800000000s", now: now) == 0, "back to the epoch itself reads")
        let fixture = EngineFixture()
        try fixture.open().shutdown()
        let run = try ChildProcess.strata(["inspect", fixture.directory.databasePath, "--at", "-9.2e18s"])
        #expect(!run.signalled && run.status != 0 && run.stderr.contains("before 1970"), "\(run.stderr)")
    }

    @Test func aRewindOfReplicatedValuesReachesTheOtherDevices() throws {
        let a = try Replica("rewind-a") { $0.config.history.keep = .seconds(600) }
        let b = try Replica("rewind-b")
        let server = LoopbackServer()
        let label = a.world.spawn(SharedLabel("first"))
        let id = try #require(a.world.id(of: label))
        #expect(a.engine.flushNow())
        let before = a.wall.milliseconds
        a.wall.advance(by: .seconds(5))
        a.world.insert(SharedLabel("second"), for: label)
        #expect(a.engine.flushNow())
        try server.push(from: a)
        server.pullAll(into: b)
        #expect(b.entity(id).flatMap { b.world.get(SharedLabel.self, for: $0) } == SharedLabel("second"))

        a.wall.advance(by: .seconds(5))
        try a.engine.rewind(to: date(before))
        #expect(a.world.get(SharedLabel.self, for: label) == SharedLabel("first"))
        #expect(a.engine.flushNow())
        try server.push(from: a)
        server.pullAll(into: b)
        #expect(b.entity(id).flatMap { b.world.get(SharedLabel.self, for: $0) } == SharedLabel("first"),
                "the value set back is logged with a new stamp, and wins on the other device")
        try a.engine.shutdown()
        try b.engine.shutdown()
    }
}

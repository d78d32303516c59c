import Foundation
import GRDB
import Testing
@testable import Strata

/// Records what the writer does, in order, and can hold it after a compaction step.
final class WriterEvents: PersistenceObserver, @unchecked Sendable {
    // @unchecked Sendable: `events` and `holdAfterStep` are only touched under `lock`.
    enum Event: Equatable {
        case commit(rows: Int)
        case step(method: String, roundDone: Bool)
    }

    private let lock = NSLock()
    private var recorded: [Event] = []
    private var holdAfterStep: Int?
    let held = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    var events: [Event] { lock.withLock { recorded } }
    var steps: Int { events.filter { if case .step = $0 { true } else { false } }.count }
    /// The writer waits in its `n`-th step's report until `release` is signalled.
    func hold(afterStep n: Int) { lock.withLock { holdAfterStep = n } }

    func didCommit(_ record: CommitRecord) { lock.withLock { recorded.append(.commit(rows: record.rows)) } }
    func didCheckpoint(_ record: CheckpointRecord) {}
    func didCompact(_ record: CompactionRecord) {
        let hold = lock.withLock { () -> Bool in
            recorded.append(.step(method: record.method, roundDone: record.roundDone))
            return recorded.filter { if case .step = $0 { true } else { false } }.count == holdAfterStep
        }
        if hold {
            held.signal()
            release.wait()
        }
    }
}

@Suite struct CompactionTests {
    /// A file with `rounds` segment rows of `perRound` position changes each (and the spawns).
    func makeBacklog(_ fixture: EngineFixture, rounds: Int, perRound: Int = 20, components: [any Component.Type] = replayComponents)
        throws -> [EntityID: ExpectedEntity] {
        let engine = try Engine.open(config: fixture.config, components: components, logger: quietLogger, options: fixture.options)
        let entities = (0 ..< perRound).map { engine.world.spawn(Position(x: Float($0), y: 0), Title("e\($0)"), Tags([UInt8($0)])) }
        engine.flushNow()
        for round in 1 ..< rounds {
            for e in entities { engine.world.mutate(Position.self, of: e) { $0.y = Float(round) } }
            engine.flushNow()
        }
        let expected = snapshot(engine.world)
        try engine.shutdown()
        return expected
    }

    func tinyCaps(_ fixture: inout EngineFixture) {
        fixture.config.compaction.idleBacklogBytes = 512
        fixture.config.compaction.backlogBytes = 1024
        fixture.config.compaction.maxBacklogBytes = 64 * 1024
    }

    @Test func aBatchWaitsForOneCompactionStepAtMost() throws {
        var fixture = EngineFixture()
        _ = try makeBacklog(fixture, rounds: 30)
        tinyCaps(&fixture)
        fixture.options.compactionMethod = .fold
        fixture.options.compactionStepBytes = 1   // one row a step: a round of 30 steps
        let events = WriterEvents()
        events.hold(afterStep: 1)
        fixture.options.observer = events
        let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        engine.endTick()   // the writer learns the power and the user: compaction may start
        #expect(events.held.wait(timeout: .now() + 20) == .success, "compaction should have started")

        // A critical change handed over while the writer is inside a round.
        let e = try #require(engine.world.entities(with: Title.self).first?.entity)
        engine.world.insert(Title("urgent"), for: e)
        engine.flush(reason: .explicitSave)
        events.release.signal()
        #expect(engine.waitForWriter())
        #expect(eventually { engine.metrics.compactionRounds == 1 })

        let order = events.events
        let commit = try #require(order.firstIndex { if case .commit = $0 { true } else { false } })
        #expect(commit == 1, "the batch must be committed right after the step it arrived during, not after the round: \(order)")
        #expect(events.steps > 10)
        try engine.shutdown()
        let reopened = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        #expect(reopened.world.get(Title.self, for: reopened.world.entity(for: engine.world.id(of: e)!)!) == Title("urgent"))
        #expect(reopened.recovery.loaded.segments <= 2, "the round folded the log: what is left came after it")
        try reopened.shutdown()
    }

    @Test func compactionFollowsThePower() throws {
        var fixture = EngineFixture()
        _ = try makeBacklog(fixture, rounds: 10)
        tinyCaps(&fixture)
        // Below what the merges of the active phase leave (60 live records), so that the
        // idle phase has something to fold whatever the records' exact size.
        fixture.config.compaction.idleBacklogBytes = 64
        let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        let backlog = engine.metrics.segmentBacklogBytes
        #expect(backlog > fixture.config.compaction.backlogBytes)

        // On battery, below the hard cap: the log waits.
        engine.powerState = .discharging(80)
        engine.endTick()
        engine.flushNow()   // the writer has seen the battery and taken a batch since
        #expect(engine.metrics.compactionSteps == 0)

        // Charging: past the backlog cap, compaction runs.
        engine.powerState = .charging(80)
        engine.endTick()
        #expect(eventually { engine.metrics.compactionRounds >= 1 })
        #expect(engine.metrics.segmentBacklogBytes < backlog)

        // Idle on mains: what is left past `idle_backlog_mb` is folded, all of it.
        let entities = engine.world.entities(with: Position.self).map(\.entity)
        for round in 0 ..< 4 {
            for e in entities { engine.world.mutate(Position.self, of: e) { $0.x = Float(100 + round) } }
            engine.flushNow()
        }
        engine.noteInput()   // idle detection starts with the host's first input
        fixture.clock.advance(by: fixture.config.persistence.idleAfter + .seconds(1))
        engine.endTick()
        #expect(eventually { engine.metrics.compactionsByMethod["fold", default: 0] >= 1 && engine.metrics.segmentBacklogRows == 0 },
                "rounds \(engine.metrics.compactionsByMethod), \(engine.metrics.segmentBacklogRows) rows left, \(engine.metrics.failedCompactionSteps) failed steps")
        try engine.shutdown()
    }

    @Test(arguments: CompactionPolicy.Method.allCases)
    func unknownTypesAndUndecodableRecordsSurviveCompactionUntouched(method: CompactionPolicy.Method) throws {
        var fixture = EngineFixture("survive\(method)")
        // Enough rounds to pass the tiny caps with moves coded in a few bytes each.
        let expected = try makeBacklog(fixture, rounds: 16)
        let before = try fixture.persisted()
        tinyCaps(&fixture)
        fixture.options.compactionMethod = method
        do {   // a build that knows Position only, and whose Tags… do not exist
            let engine = try Engine.open(config: fixture.config, components: [Position.self], logger: quietLogger, options: fixture.options)
            #expect(engine.recovery.loaded.unknownTypeRows > 0)
            engine.endTick()
            #expect(eventually { engine.metrics.compactionRounds >= 1 })
            try engine.shutdown()
        }
        let after = try fixture.persisted()
        #expect(after == before, "compaction must move bytes it cannot read, unchanged")
        let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        #expect(snapshot(engine.world) == expected)
        try engine.shutdown()
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.compactions >= 1)
        if method == .fold { #expect(inspection.baseComponentRows == 60) }
    }

    @Test func anUnreadableSegmentIsSetAsideReportedAndCompactionGoesOn() throws {
        var fixture = EngineFixture()
        _ = try makeBacklog(fixture, rounds: 4)
        // Flip a byte of the third row's records, as a bad sector would.
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        let (id, damaged) = try queue.write { db -> (Int64, Data) in
            let row = try #require(try Row.fetchOne(db, sql: "SELECT id, records FROM segments ORDER BY id LIMIT 1 OFFSET 2"))
            var records: Data = row["records"]
            records[records.count / 2] ^= 0x40
            try db.execute(sql: "UPDATE segments SET records = ? WHERE id = ?", arguments: [records, row["id"]])
            return (row["id"], records)
        }
        try queue.close()
        tinyCaps(&fixture)
        let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        #expect(engine.recovery.loaded.unreadableSegments == 1)
        #expect(engine.recovery.loaded.segments == 4)
        // The round after it moved every Position a little: coded against the damaged row's
        // values, it is unresolved (reported, never decoded against a wrong base), and every
        // Position keeps the round before the damage.
        #expect(engine.recovery.loaded.unresolvedRecords == 20, "\(engine.recovery.loaded)")
        #expect(engine.world.entities(with: Position.self).allSatisfy { $0.value.y == 1 })
        let world = engine.world.entities(with: Position.self).map(\.value)
        #expect(engine.compactNow(), "compaction sets the unreadable row aside and goes on")
        #expect(engine.metrics.segmentsSetAside == 1)
        #expect(engine.metrics.unreadableSegments == 0)
        try engine.shutdown()

        let stored = try DatabaseQueue(path: fixture.directory.databasePath).read { db in
            (try Data.fetchOne(db, sql: "SELECT records FROM segments_set_aside WHERE id = ?", arguments: [id]),
             try String.fetchOne(db, sql: "SELECT reason FROM segments_set_aside WHERE id = ?", arguments: [id]),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM segments") ?? -1)
        }
        #expect(stored.0 == damaged, "its bytes are kept as they were")
        #expect(stored.1?.contains("checksum") == true, "\(stored.1 ?? "")")
        #expect(stored.2 == 0, "every other row was compacted")
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.unreadableSegments == 0)
        #expect(inspection.segmentsSetAside == 1)

        // The same world after the compaction, and the row can be written out.
        let reopened = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        #expect(reopened.world.entities(with: Position.self).map(\.value).sorted { ($0.x, $0.y) < ($1.x, $1.y) }
                == world.sorted { ($0.x, $0.y) < ($1.x, $1.y) })
        try reopened.shutdown()
        let folder = fixture.directory.url.appendingPathComponent("set-aside").path
        let run = try ChildProcess.strata(["doctor", fixture.directory.databasePath, "--export-set-aside", folder])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/segment-\(id).records")) == damaged)
        #expect(FileManager.default.fileExists(atPath: folder + "/segment-\(id).json"))
        let doctor = try ChildProcess.strata(["doctor", fixture.directory.databasePath])
        #expect(doctor.stdout.contains("set aside"), "\(doctor.stdout)")
    }

    @Test func compactNowFoldsEverythingAndReloadsTheSame() throws {
        let fixture = EngineFixture()
        let expected = try makeBacklog(fixture, rounds: 12)
        let engine = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        #expect(engine.metrics.segmentBacklogRows == 12)
        #expect(engine.compactNow())
        #expect(engine.metrics.segmentBacklogRows == 0)
        #expect(engine.metrics.segmentLiveBytes == 0)
        #expect(engine.metrics.compactionsByMethod == ["fold": 1])
        try engine.shutdown()
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.segments == 0)
        #expect(inspection.baseComponentRows == 60)
        #expect(try fixture.count("SELECT count(*) FROM components WHERE updated_at IS NOT NULL") == 0, "a base row stores no time (schema 22)")
        let reopened = try Engine.open(config: fixture.config, components: replayComponents, logger: quietLogger, options: fixture.options)
        #expect(snapshot(reopened.world) == expected)
        try reopened.shutdown()
    }
}

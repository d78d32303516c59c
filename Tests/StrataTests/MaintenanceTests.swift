import Foundation
import GRDB
import Testing
@testable import Strata

/// When a maintenance round runs (pure: in virtual time, by the table).
@Suite struct MaintenancePolicyTests {
    let t0 = Instant(nanoseconds: 1_000_000_000_000)
    var config: MaintenanceConfig {
        var c = MaintenanceConfig()
        c.interval = .seconds(3600)
        c.sizeWarningBytes = 50 << 20
        c.vacuumMinFreeBytes = 1 << 20
        c.vacuumMaxFreeBytes = 32 << 20
        return c
    }

    func due(at now: Instant, last: Instant? = nil, mains: Bool, idle: Bool, file: Int = 10 << 20, free: Int = 0,
             incremental: Bool = true, warned: Bool = false) -> [MaintenancePolicy.Task] {
        MaintenancePolicy(config: config).due(.init(now: now, lastRound: last, onMains: mains, idle: idle, fileBytes: file,
                                                    freeBytes: free, incrementalVacuum: incremental, sizeWarned: warned),
                                              openedAt: t0)
    }

    @Test func idleOnMainsOnlyAndNotMoreOftenThanTheInterval() {
        let later = t0 + .seconds(61)
        #expect(due(at: later, mains: true, idle: true) == [.retention, .optimize], "a minute after the open")
        #expect(due(at: t0 + .seconds(30), mains: true, idle: true).isEmpty, "not right after the open")
        #expect(due(at: later, mains: true, idle: false).isEmpty, "not while the user plays")
        #expect(due(at: later, mains: false, idle: true).isEmpty, "not on battery")
        #expect(due(at: later + .seconds(10), last: later, mains: true, idle: true).isEmpty, "not again within the interval")
        #expect(due(at: later + .seconds(3600), last: later, mains: true, idle: true) == [.retention, .optimize])
        #expect(due(at: later, mains: true, idle: true, free: 2 << 20) == [.retention, .vacuum, .optimize])
        #expect(due(at: later, mains: true, idle: true, free: 2 << 20, incremental: false) == [.retention, .optimize],
                "a file without incremental auto_vacuum is never vacuumed on its own")
    }

    @Test func onBatteryOnlyPastTheHardLimits() {
        #expect(due(at: t0, mains: false, idle: false, free: 33 << 20) == [.vacuum])
        #expect(due(at: t0, mains: false, idle: false, free: 33 << 20, incremental: false).isEmpty)
        #expect(due(at: t0, mains: false, idle: false, file: 51 << 20) == [.retention, .vacuum], "past size_warning_mb")
        #expect(due(at: t0, mains: false, idle: false, file: 51 << 20, warned: true).isEmpty, "once per crossing")
    }
}

/// Maintenance on the real writer thread, on real files.
@Suite struct MaintenanceTests {
    func fixture(_ name: String = #function) -> (EngineFixture, TestWallClock) {
        var fixture = EngineFixture(name)
        let wall = TestWallClock()
        fixture.options.wallClock = { wall.milliseconds }
        fixture.config.jobs.maxAttempts = 1
        fixture.config.maintenance.keepDeadJobs = .seconds(3600)
        fixture.config.maintenance.keepRejectedWrites = .seconds(3600)
        fixture.config.maintenance.retentionStepRows = 7   // many steps
        return (fixture, wall)
    }

    /// `dead` dead jobs and one pending job, each on an entity of its own, and logged
    /// operations no peer acknowledged.
    func populate(_ engine: Engine, dead: Int) throws -> (pending: Job.ID, operations: Int) {
        let ids = (0 ... dead).map { engine.world.id(of: engine.world.spawn(Title("t\($0)")))! }
        for _ in 0 ..< 20 { engine.appendOperation(kind: "shape.move", payload: [1]) }
        #expect(engine.flushNow())
        for id in ids.dropFirst() { try engine.jobs.enqueue("render", for: id) }
        let claimed = try engine.jobs.claim(kinds: ["render"], limit: dead)
        for job in claimed { _ = try engine.jobs.fail(job.id, error: "broken") }
        let pending = try engine.jobs.enqueue("transcribe", for: ids[0])
        #expect(try engine.jobs.counts()[.dead] == dead)
        return (pending.id, 20)
    }

    @Test func retentionRunsWhenIdleOnMainsAndNeverTouchesPendingWorkOrUnacknowledgedOperations() throws {
        let (fixture, wall) = fixture()
        let engine = try fixture.open()
        let (pending, operations) = try populate(engine, dead: 30)
        wall.advance(by: .seconds(3601))   // the dead jobs are past keep_dead_jobs_secs

        // On battery, idle, an hour on: nothing below the hard limits.
        engine.powerState = .discharging(80)
        engine.noteInput()
        fixture.clock.advance(by: .seconds(3700))
        engine.endTick()
        #expect(engine.flushNow())   // the writer has seen the battery and taken a batch since
        #expect(engine.metrics.maintenanceRounds == 0)
        #expect(try engine.jobs.counts()[.dead] == 30)

        // Charging, still idle: a round, in steps.
        engine.powerState = .charging(80)
        engine.endTick()
        #expect(eventually { engine.metrics.maintenanceRounds == 1 })
        #expect(engine.metrics.retentionRowsDeleted == 30)
        #expect(engine.metrics.maintenanceSteps >= 30 / 7 + 1, "retention_step_rows = 7: several transactions")
        #expect(engine.metrics.optimizeRuns == 1)
        let counts = try engine.jobs.counts()
        #expect(counts[.dead, default: 0] == 0)
        #expect(counts[.pending] == 1)
        #expect(try engine.jobs.job(pending)?.status == .pending)
        #expect(try fixture.count("SELECT count(*) FROM operation_log") == operations, "unacknowledged: kept")
        try engine.shutdown()
    }

    @Test func youngRowsStayAndZeroKeepsForever() throws {
        var (fixture, wall) = fixture()
        fixture.config.maintenance.keepRejectedWrites = .zero
        let engine = try fixture.open()
        _ = try populate(engine, dead: 5)
        wall.advance(by: .seconds(1800))   // half the age
        #expect(engine.maintainNow())
        #expect(engine.metrics.maintenanceRounds == 1)
        #expect(try engine.jobs.counts()[.dead] == 5, "younger than keep_dead_jobs_secs")
        wall.advance(by: .seconds(1801))
        #expect(engine.maintainNow())
        #expect(try engine.jobs.counts()[.dead, default: 0] == 0)
        try engine.shutdown()
    }

    @Test func freePagesAreReturnedToTheFilesystem() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        // A few MB of rows, folded into base rows, then despawned: their pages go to the freelist.
        let long = String(repeating: "x", count: 2000)
        let entities = (0 ..< 2000).map { engine.world.spawn(Title("\(long)\($0)")) }
        #expect(engine.compactNow())
        for entity in entities { engine.world.despawn(entity) }
        #expect(engine.compactNow())
        let freeBefore = try fixture.count("PRAGMA freelist_count")
        #expect(freeBefore > 500, "\(freeBefore) free pages")
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: fixture.directory.databasePath)[.size] as! Int

        #expect(engine.maintainNow())
        #expect(engine.metrics.pagesVacuumed >= freeBefore - 1)
        #expect(try fixture.count("PRAGMA freelist_count") == 0)
        #expect(engine.metrics.freeBytes == 0)
        try engine.shutdown()   // the checkpoint writes the shrunken file
        let sizeAfter = try FileManager.default.attributesOfItem(atPath: fixture.directory.databasePath)[.size] as! Int
        #expect(sizeAfter < sizeBefore - 500 * 4096 / 2, "\(sizeBefore) → \(sizeAfter) bytes")
    }

    @Test func aFilePastTheSizeWarningIsCleanedUpOnBatteryAndSaysSo() throws {
        var (fixture, wall) = fixture()
        fixture.config.maintenance.sizeWarningBytes = 1024 * 1024
        let engine = try fixture.open()
        _ = try populate(engine, dead: 10)
        wall.advance(by: .seconds(3601))
        #expect(engine.metrics.maintenanceRounds == 0, "below the warning")
        let long = String(repeating: "y", count: 1000)
        for index in 0 ..< 1500 { engine.world.spawn(Title("\(long)\(index)")) }   // 1.5 MB
        engine.powerState = .discharging(50)
        #expect(engine.flushNow())
        fixture.clock.advance(by: MaintenanceTask.statsInterval)   // the writer looks at the file's size again
        engine.endTick()
        #expect(engine.flushNow())
        #expect(eventually { engine.metrics.maintenanceRounds >= 1 })
        #expect(engine.metrics.retentionRowsDeleted == 10)
        #expect(engine.metrics.optimizeRuns == 0, "statistics wait for the charger")
        #expect(engine.metrics.fileSizeWarning)
        #expect(engine.metrics.alerts.contains { $0.contains("size_warning_mb") })
        try engine.shutdown()
    }

    @Test func aCriticalBatchDoesNotWaitForTheRound() throws {
        var (fixture, wall) = fixture()
        fixture.config.maintenance.retentionStepRows = 1
        do {
            let engine = try fixture.open()
            _ = try populate(engine, dead: 100)
            try engine.shutdown()
        }
        // Each retention step (one row) now takes 20 ms: the round takes two seconds at least.
        fixture.options.prepareConnection = { db in
            db.add(function: DatabaseFunction("sleep_ms", argumentCount: 1, pure: false) { arguments in
                usleep(UInt32(Int.fromDatabaseValue(arguments[0]) ?? 0) * 1000)
                return nil
            })
            try db.execute(sql: "CREATE TEMP TRIGGER slow_delete BEFORE DELETE ON jobs BEGIN SELECT sleep_ms(20); END")
        }
        let engine = try fixture.open()
        wall.advance(by: .seconds(7200))
        engine.powerState = .charging(80)
        engine.noteInput()
        fixture.clock.advance(by: .seconds(3700))
        engine.endTick()
        #expect(eventually { engine.metrics.maintenanceSteps >= 5 }, "the round is under way")

        // A critical change, flushed at once: committed between two steps, not after the round.
        engine.world.spawn(Title("urgent"))
        #expect(engine.flushNow(reason: .majorAction))
        #expect(engine.metrics.maintenanceRounds == 0, "the round goes on after the commit")
        #expect(engine.metrics.maintenanceSteps < 100)
        #expect(try fixture.entityCount() == 102)

        #expect(eventually(timeout: .seconds(60)) { engine.metrics.maintenanceRounds == 1 })
        #expect(engine.metrics.retentionRowsDeleted == 100)
        try engine.shutdown()
    }

    @Test func newFilesAreIncremental() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        engine.world.spawn(Title("a"))
        try engine.shutdown()
        #expect(try fixture.count("PRAGMA auto_vacuum") == 2)
    }

    /// `[database] auto_vacuum = "none"` (no pointer-map pages: fewer bytes written) makes a
    /// file whose free pages are reused but never returned; a file keeps the mode it was
    /// made with whatever the config says later.
    @Test func autoVacuumNoneMakesAFileWithoutPointerMapsAndAFileKeepsItsMode() throws {
        var (fixture, _) = fixture()
        fixture.config.database.autoVacuum = .none
        var engine = try fixture.open()
        engine.world.spawn(Title("a"))
        try engine.shutdown()
        #expect(try fixture.count("PRAGMA auto_vacuum") == 0)

        fixture.config.database.autoVacuum = .incremental
        engine = try fixture.open()
        engine.world.spawn(Title("b"))
        try engine.shutdown()
        #expect(try fixture.count("PRAGMA auto_vacuum") == 0)
        #expect(try fixture.entityCount() == 2)
    }
}

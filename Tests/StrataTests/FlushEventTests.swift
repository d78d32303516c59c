import Foundation
import GRDB
import Logging
import Testing
@testable import Strata

/// The specification's flush events in virtual time: the right tiers, the right reason, by the deadline.
@Suite struct FlushEventTests {
    /// An engine with one saved entity and one pending change in each persisted tier.
    func engineWithPendingChanges(_ fixture: EngineFixture) throws -> (Engine, Entity) {
        let engine = try fixture.open()
        let e = engine.world.spawn(Position(x: 0, y: 0), Title("t"))
        engine.flushNow(reason: .majorAction)
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }   // derived
        engine.world.mutate(Title.self, of: e) { $0.revision = 1 } // critical
        return (engine, e)
    }

    func bothTiersSaved(_ fixture: EngineFixture) throws -> Bool {
        try fixture.count(persisted: Position(x: 1, y: 0)) + fixture.count(persisted: Title("t", revision: 1)) == 2
    }

    @Test(arguments: [FlushReason.majorAction, .networkOperations])
    func withinTheCriticalDelayEveryTierIsFlushedOnce(reason: FlushReason) throws {
        let fixture = EngineFixture()
        let (engine, _) = try engineWithPendingChanges(fixture)
        let before = engine.metrics
        engine.flush(reason: reason)
        fixture.clock.advance(by: .milliseconds(300))
        engine.flush(reason: reason)   // a second event in the window shares the commit
        engine.endTick()
        engine.waitForWriter()
        #expect(try !bothTiersSaved(fixture), "not before it is due")

        fixture.clock.advance(by: fixture.config.persistence.criticalFlushDelay - .milliseconds(300))
        engine.endTick()
        engine.waitForWriter()
        #expect(try bothTiersSaved(fixture), "derived and critical, by the critical delay")
        #expect(engine.metrics.flushesByReason[reason, default: 0] - before.flushesByReason[reason, default: 0] == 1)
        #expect(engine.metrics.commitCount - before.commitCount == 1)
        #expect(engine.metrics.checkpointCount == 0)
        try engine.shutdown()
    }

    @Test(arguments: [FlushReason.background, .lowMemory, .explicitSave, .documentSwitch])
    func appTransitionsFlushEveryTierNowThenCheckpoint(reason: FlushReason) throws {
        let fixture = EngineFixture()
        let (engine, _) = try engineWithPendingChanges(fixture)
        engine.flush(reason: reason)   // no endTick, no time: handed off in the call
        engine.waitForWriter()
        #expect(try bothTiersSaved(fixture))
        #expect(engine.metrics.flushesByReason[reason] == 1)
        #expect(engine.metrics.checkpointsByMode["PASSIVE"] == 1)
        try engine.shutdown()
    }

    @Test func goingToTheBackgroundWaitsForTheCommit() throws {
        let fixture = EngineFixture()
        let (engine, _) = try engineWithPendingChanges(fixture)
        #expect(engine.willEnterBackground())
        #expect(try bothTiersSaved(fixture))
        #expect(engine.metrics.flushesByReason[.background] == 1)
        #expect(engine.metrics.checkpointsByMode["PASSIVE"] == 1, "then a checkpoint, before willEnterBackground returns")
        try engine.shutdown()
    }

    /// The rows of `vector_clock` in the file, by node.
    func storedClock(_ fixture: EngineFixture) throws -> [NodeID: Int64] {
        let queue = try fixture.reader()
        defer { try? queue.close() }
        return try queue.read { db in
            try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT node, seq FROM vector_clock").map { row in
                ((row["node"] as Data).withUnsafeBytes { NodeID(bytes: $0)! }, row["seq"] as Int64)
            })
        }
    }

    /// The vector clock is derived (rebuilt from the log at open): its rows ride the
    /// critical flush once five operations are logged, and never make a flush or a commit
    /// of their own.
    @Test func theVectorClockRidesTheCriticalFlushOnceFiveOperationsAreLogged() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let delay = fixture.config.persistence.criticalFlushDelay
        for _ in 0 ..< 4 { engine.appendOperation(kind: "op", payload: []) }
        engine.endTick()
        fixture.clock.advance(by: delay)
        engine.endTick()
        engine.waitForWriter()
        #expect(try fixture.count("SELECT count(*) FROM operation_log") == 4, "the operations are critical: within the delay")
        #expect(try storedClock(fixture).isEmpty, "four operations: the clock may lag")
        #expect(engine.metrics.commitCount == 1 && engine.metrics.fullCommitCount == 1)

        engine.appendOperation(kind: "op", payload: [])
        engine.endTick()
        fixture.clock.advance(by: delay)
        engine.endTick()
        engine.waitForWriter()
        #expect(try storedClock(fixture) == [engine.nodeID: 5], "the fifth: the clock goes with its flush")
        #expect(engine.metrics.commitCount == 2, "one commit per critical flush, nothing more")
        #expect(engine.metrics.flushesByReason.keys.sorted { $0.rawValue < $1.rawValue } == [.criticalDelay])
        try engine.shutdown()
    }

    @Test func aClockDueByTimeWaitsForTheNextCriticalFlush() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let e = engine.world.spawn(Title("t"))
        engine.flushNow(reason: .majorAction)
        let commits = engine.metrics.commitCount
        engine.appendOperation(kind: "op", payload: [])
        fixture.clock.advance(by: fixture.config.persistence.criticalFlushDelay)
        engine.endTick()
        engine.waitForWriter()
        #expect(try fixture.count("SELECT count(*) FROM operation_log") == 1)
        let early = try storedClock(fixture)[engine.nodeID]
        #expect(early == nil, "one operation, a second after it: the clock may lag")

        fixture.clock.advance(by: fixture.config.persistence.vectorClockInterval * 3)
        engine.endTick()
        engine.waitForWriter()
        #expect(engine.metrics.commitCount == commits + 1, "due by time, the clock asks for no flush of its own")
        #expect(try storedClock(fixture)[engine.nodeID] == nil)

        engine.world.mutate(Title.self, of: e) { $0.revision = 1 }   // the next critical flush
        fixture.clock.advance(by: fixture.config.persistence.criticalFlushDelay)
        engine.endTick()
        engine.waitForWriter()
        #expect(try storedClock(fixture) == [engine.nodeID: 1], "it rides the next critical flush")
        #expect(engine.metrics.commitCount == commits + 2)
        try engine.shutdown()
    }

    @Test func operationsFromPeersAreFlushedWithinTheCriticalDelayInOneCommit() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let peer = NodeID()
        for seq in 1 ... 5 {
            engine.receiveOperation(LoggedOperation(node: peer, seq: Int64(seq), timestamp: HybridTimestamp(milliseconds: 1, counter: 0),
                                                    kind: "op", payload: []))
        }
        engine.endTick()
        fixture.clock.advance(by: fixture.config.persistence.criticalFlushDelay)
        engine.endTick()
        engine.waitForWriter()
        #expect(engine.metrics.flushesByReason[.networkOperations] == 1)
        #expect(engine.metrics.flushCount == 1 && engine.metrics.commitCount == 1)
        #expect(try storedClock(fixture) == [peer: 5], "five operations: the clock went along")
        try engine.shutdown()
    }

    @Test func aHostThatNeverReportsInputIsNeverIdle() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.powerState = .discharging(80)   // 10 s while active
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow(reason: .majorAction)
        fixture.clock.advance(by: fixture.config.persistence.idleAfter * 10)
        engine.endTick()
        #expect(engine.activity == .active, "no noteInput(): no idle user, whatever the time")
        #expect(engine.derivedInterval == .seconds(10))
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }
        fixture.clock.advance(by: .seconds(10))
        engine.endTick()
        #expect(engine.metrics.flushesByReason[.derivedInterval] == 1)
        #expect(engine.metrics.flushesByReason[.idleInterval] == nil)
        try engine.shutdown()
    }

    @Test func idleUsesTheIdleIntervalAndSaysSo() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.powerState = .discharging(80)   // 10 s while active
        engine.noteInput()                     // a host that reports input: idle detection starts
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow(reason: .majorAction)
        fixture.clock.advance(by: fixture.config.persistence.idleAfter + .seconds(1))
        #expect(engine.activity == .idle)
        #expect(engine.derivedInterval == .seconds(30))
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }
        fixture.clock.advance(by: .seconds(29))
        engine.endTick()
        #expect(engine.metrics.flushesByReason[.idleInterval] == nil)
        fixture.clock.advance(by: .seconds(1))
        engine.endTick()
        #expect(engine.metrics.flushesByReason[.idleInterval] == 1)

        engine.noteInput()
        #expect(engine.activity == .active)
        #expect(engine.derivedInterval == .seconds(10))
        try engine.shutdown()
    }

    @Test func aShorterIntervalAppliesToPendingChangesAtOnce() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.powerState = .discharging(15)   // 60 s
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow(reason: .majorAction)
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }
        engine.endTick()
        fixture.clock.advance(by: .seconds(5))
        engine.powerState = .charging(15)      // 5 s: already past
        engine.endTick()
        #expect(engine.metrics.flushesByReason[.derivedInterval] == 1)
        try engine.shutdown()
    }

    @Test func aLongerIntervalKeepsThePendingDeadline() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.powerState = .charging(50)      // 5 s
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow(reason: .majorAction)
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }
        engine.endTick()
        engine.powerState = .discharging(15)   // 60 s, but the change was made under 5 s
        fixture.clock.advance(by: .seconds(5))
        engine.endTick()
        #expect(engine.metrics.flushesByReason[.derivedInterval] == 1)
        try engine.shutdown()
    }

    @Test func anAttachedPowerMonitorDrivesThePolicy() throws {
        var fixture = EngineFixture()
        fixture.config.persistence.power.source = .fallback
        fixture.config.persistence.power.fallback = .batteryLow
        let engine = try fixture.open()
        engine.attach(PowerMonitor(config: fixture.config.persistence.power, logger: quietLogger))
        engine.endTick()
        #expect(engine.powerState == PowerSourceConfig.Fallback.batteryLow.state)
        #expect(engine.derivedInterval == .seconds(60))
        #expect(engine.powerReading.source == .fallback)
        try engine.shutdown()
    }

    /// The engine copies the monitor's reading only when it changed (a counter, read at
    /// every end of tick); a state the host sets by hand lasts until the next end of tick.
    @Test func theEngineFollowsEveryChangeOfAnAttachedMonitor() throws {
        var fixture = EngineFixture()
        fixture.config.persistence.power.source = .fallback
        fixture.config.persistence.power.fallback = .ac
        let engine = try fixture.open()
        let monitor = PowerMonitor(config: fixture.config.persistence.power, logger: quietLogger)
        engine.attach(monitor)
        engine.endTick()
        #expect(engine.powerTier == .desktop)

        monitor.publish(PowerReading(source: .fallback, state: .discharging(15)))
        engine.endTick()
        #expect(engine.powerTier == .low)
        #expect(engine.derivedInterval == .seconds(60))

        engine.powerState = .charging(50)
        #expect(engine.powerTier == .charging)
        engine.endTick()
        #expect(engine.powerState == .discharging(15), "the attached monitor has the last word")

        monitor.publish(PowerReading(source: .fallback, state: .discharging(80)))
        monitor.publish(PowerReading(source: .fallback, state: .charging(81)))
        engine.endTick()
        #expect(engine.powerState == .charging(81), "the latest of several changes")
        try engine.shutdown()
    }

    @Test func memoryPressureFlushesEveryTierWithTheLowMemoryReason() throws {
        let fixture = EngineFixture()
        // The kernel cannot be made to feel real pressure in a test: the monitor reads a
        // PSI file written here instead of /proc/pressure/memory.
        let psi = fixture.directory.url.appendingPathComponent("pressure")
        try "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n".write(to: psi, atomically: true, encoding: .utf8)
        let monitor = MemoryPressureMonitor(thresholdPercent: 10, pollInterval: .milliseconds(10),
                                            sources: .init(psiPath: psi.path, memoryEventsPath: nil), logger: quietLogger)
        let (engine, _) = try engineWithPendingChanges(fixture)
        engine.attach(monitor)
        try "some avg10=42.50 avg60=10.00 avg300=2.00 total=99\n".write(to: psi, atomically: true, encoding: .utf8)
        #expect(eventually { monitor.warningCount == 1 })
        engine.endTick()
        engine.waitForWriter()
        #expect(engine.metrics.flushesByReason[.lowMemory] == 1)
        #expect(try bothTiersSaved(fixture))
        #expect(monitor.lastWarning?.contains("42.5") == true)
        try engine.shutdown()
    }
}

@Suite struct MemoryPressureTests {
    @Test func parsesPSI() {
        let text = "some avg10=1.53 avg60=0.80 avg300=0.21 total=123456\nfull avg10=0.50 avg60=0.00 avg300=0.00 total=0\n"
        #expect(MemoryPressure.someAvg10(psi: text) == 1.53)
        #expect(MemoryPressure.someAvg10(psi: "garbage") == nil)
    }

    @Test func parsesMemoryEventsAndCgroupPaths() {
        #expect(MemoryPressure.events("low 0\nhigh 3\nmax 1\noom 0\noom_kill 0\n") == ["low": 0, "high": 3, "max": 1, "oom": 0, "oom_kill": 0])
        #expect(MemoryPressure.cgroupPath(procSelfCgroup: "0::/user.slice/session-1.scope\n") == "/user.slice/session-1.scope")
        #expect(MemoryPressure.cgroupPath(procSelfCgroup: "12:memory:/x\n") == nil)
    }

    @Test func psiWarnsOnTheRisingEdgeWithHysteresis() {
        var detector = MemoryPressure.Detector(thresholdPercent: 10)
        #expect(detector.update(someAvg10: 5, events: nil) == nil)
        #expect(detector.update(someAvg10: 12, events: nil) != nil)
        #expect(detector.update(someAvg10: 30, events: nil) == nil, "still the same episode")
        #expect(detector.update(someAvg10: 7, events: nil) == nil, "not re-armed above half the threshold")
        #expect(detector.update(someAvg10: 11, events: nil) == nil)
        #expect(detector.update(someAvg10: 4, events: nil) == nil)   // re-armed
        #expect(detector.update(someAvg10: 10, events: nil) != nil)
    }

    @Test func cgroupCountersWarnWhenTheyRise() {
        var detector = MemoryPressure.Detector(thresholdPercent: 10)
        #expect(detector.update(someAvg10: nil, events: ["high": 2, "oom": 0]) == nil, "the first reading is the baseline")
        #expect(detector.update(someAvg10: nil, events: ["high": 2, "oom": 0]) == nil)
        #expect(detector.update(someAvg10: nil, events: ["high": 3, "oom": 0])?.contains("high") == true)
        #expect(detector.update(someAvg10: nil, events: ["high": 3, "oom": 1])?.contains("oom") == true)
    }

    @Test func theSystemSourcesAreFoundWhereTheKernelHasThem() {
        let monitor = MemoryPressureMonitor(thresholdPercent: 10, pollInterval: .seconds(1), logger: quietLogger)
        #expect(monitor.isAvailable == FileManager.default.isReadableFile(atPath: "/proc/pressure/memory")
            || (MemoryPressureMonitor.Sources.system.memoryEventsPath.map { FileManager.default.isReadableFile(atPath: $0) } ?? false))
    }
}

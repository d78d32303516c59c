import Foundation
import StrataCanvas
import Testing
@testable import Strata
import StrataTesting

/// The whole path in virtual time: world → scheduler → writer → SQLite, asserting on
/// the database file. Time only moves when the test advances the clock.
@Suite struct FlushSchedulerTests {
    /// The quiet period only skips decisions that would flush nothing, and the due
    /// instants it keeps decide a flush when it runs out by time as the policy would:
    /// driven through the same random changes, events, operations, input, idling and
    /// power changes, a scheduler that keeps it and one that forgets it before every tick
    /// (so it always asks the policy) flush the same tiers at the same ticks. The quiet
    /// one also takes a first critical change into its quiet period as ``Engine/endTick()``
    /// does (`admitCriticalChange`), without asking the policy.
    @Test(arguments: 0 ..< 8)
    func theQuietPeriodNeverChangesADecision(seed: Int) {
        var rng = SplitMix64(seed: UInt64(seed) + 100)
        let clock = ManualClock()
        let policy = FlushPolicy(config: PersistenceConfig())
        let lookahead = Duration.milliseconds(167)
        let worlds = [World(clock: clock), World(clock: clock)]
        var schedulers = [FlushScheduler(policy: policy, now: clock.now(), lookahead: lookahead),
                          FlushScheduler(policy: policy, now: clock.now(), lookahead: lookahead)]
        var entities: [[Entity]] = [[], []]
        let powers: [PowerState] = [.assumedAC, .discharging(80), .discharging(30), .discharging(10), .charging(50)]
        var power = PowerState.assumedAC
        var flushes = 0, admitted = 0
        for tick in 0 ..< 3000 {
            let roll = Int.random(in: 0 ..< 100, using: &rng)
            for side in 0 ..< 2 {
                switch roll {
                case 0 ..< 3: entities[side].append(worlds[side].spawn(Position(x: 0, y: 0), Title("t")))
                case 3 ..< 10 where !entities[side].isEmpty:
                    worlds[side].mutate(Position.self, of: entities[side][tick % entities[side].count]) { $0.x += 1 }
                case 10 where !entities[side].isEmpty:
                    worlds[side].mutate(Title.self, of: entities[side][tick % entities[side].count]) { $0.revision += 1 }
                case 11: schedulers[side].request(.majorAction, by: clock.now() + .seconds(1))
                case 12: schedulers[side].recordOperations(1, now: clock.now())
                case 13 ..< 40: schedulers[side].noteInput(at: clock.now())
                default: break
                }
            }
            if roll == 99 {
                power = powers[Int.random(in: 0 ..< powers.count, using: &rng)]
                for side in 0 ..< 2 { schedulers[side].reconsider() }
            }
            clock.advance(by: roll == 98 ? .seconds(70) : .milliseconds(Int64.random(in: 1 ... 400, using: &rng)))
            schedulers[1].reconsider()
            let now = clock.now()
            if schedulers[0].admitCriticalChange(now: now, critical: worlds[0].tracker.firstCritical,
                                                 derived: worlds[0].tracker.firstDerived) { admitted += 1 }
            let batches = [WriteBatch(), WriteBatch()]
            let due = (0 ..< 2).map { schedulers[$0].endTick(world: worlds[$0], now: clock.now(), power: power, into: batches[$0]) }
            #expect(due[0] == due[1], "seed \(seed), tick \(tick): the quiet scheduler decided \(due[0]), the fresh one \(due[1])")
            #expect(batches[0].reasons == batches[1].reasons && batches[0].rowCount == batches[1].rowCount,
                    "seed \(seed), tick \(tick): the batches differ")
            if due[0] { flushes += 1 }
            if due[0] != due[1] { return }
        }
        #expect(flushes > 50)
        #expect(admitted > 10)
    }

    @Test func criticalChangesAreCommittedByTheDelayAndNotBefore() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.world.spawn(Title("doc"))
        let notYet = fixture.config.persistence.criticalFlushDelay - engine.flushLookahead - .milliseconds(1)
        fixture.clock.advance(by: notYet)
        engine.endTick()
        engine.waitForWriter()
        #expect(try fixture.entityCount() == 0)

        fixture.clock.advance(by: .milliseconds(1) + engine.flushLookahead)   // now exactly at the delay
        engine.endTick()
        engine.waitForWriter()
        #expect(try fixture.entityCount() == 1)
        #expect(try fixture.componentCount(Title.self) == 1)
        #expect(engine.metrics.flushesByReason[.criticalDelay] == 1)
        #expect(engine.metrics.fullCommitCount == 1)
        try engine.shutdown()
    }

    @Test func derivedChangesAreCommittedByTheIntervalAndNotBefore() throws {
        var fixture = EngineFixture()
        fixture.config.persistence.batteryAdaptive = false
        fixture.config.persistence.flushInterval = .seconds(10)
        let engine = try fixture.open()
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow()
        #expect(try fixture.componentCount(Position.self) == 1)

        engine.world.mutate(Position.self, of: e) { $0.x = 42 }
        for _ in 0 ..< 9 {   // 9 s of ticks: nothing due
            fixture.clock.advance(by: .seconds(1))
            engine.endTick()
        }
        engine.waitForWriter()
        #expect(try fixture.count(persisted: Position(x: 42, y: 0)) == 0)

        fixture.clock.advance(by: .seconds(1))
        engine.endTick()
        engine.waitForWriter()
        #expect(try fixture.count(persisted: Position(x: 42, y: 0)) == 1)
        #expect(engine.metrics.flushesByReason[.derivedInterval] == 1)
        try engine.shutdown()
    }

    @Test func derivedIntervalFollowsThePowerState() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.powerState = .discharging(15)
        #expect(engine.derivedInterval == .seconds(60))
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow()
        engine.world.mutate(Position.self, of: e) { $0.x = 1 }
        fixture.clock.advance(by: .seconds(59))
        engine.endTick()
        #expect(engine.metrics.flushesByReason[.derivedInterval] == nil)
        fixture.clock.advance(by: .seconds(1))
        engine.endTick()
        #expect(engine.metrics.flushesByReason[.derivedInterval] == 1)
        try engine.shutdown()
    }

    @Test func ephemeralChangesAreNeverWritten() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let e = engine.world.spawn(Cursor(x: 0))
        for i in 0 ..< 100 {
            engine.world.mutate(Cursor.self, of: e) { $0.x = Float(i) }
            fixture.clock.advance(by: .seconds(1))
            engine.endTick()
        }
        engine.flushNow()
        try engine.shutdown()
        #expect(try fixture.entityCount() == 1)
        #expect(try fixture.componentCount(Cursor.self) == 0)
        #expect(try fixture.count("SELECT count(*) FROM component_types WHERE name = ?", [Cursor.typeName]) == 1)
    }

    @Test func threeHundredUpdatesOfOneKeyAreOneRow() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let e = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow()
        let before = engine.metrics
        for i in 1 ... 300 {   // a 5 s drag at 60 Hz
            engine.world.mutate(Position.self, of: e) { $0.x = Float(i) }
            fixture.clock.advance(by: .milliseconds(16))
            engine.endTick()
        }
        engine.flushNow()
        let after = engine.metrics
        #expect(after.componentRowsWritten - before.componentRowsWritten == 1)
        #expect(after.commitCount - before.commitCount == 1)
        #expect(try fixture.count(persisted: Position(x: 300, y: 0)) == 1)
        try engine.shutdown()
    }

    @Test func aSpawnIsWrittenWithItsComponentsInOneCriticalBatch() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.world.spawn(Position(x: 1, y: 1), Title("t"))   // derived + critical
        fixture.clock.advance(by: fixture.config.persistence.criticalFlushDelay)
        engine.endTick()
        engine.waitForWriter()
        // Long before any derived interval, the derived component is there with its entity.
        #expect(try fixture.entityCount() == 1)
        #expect(try fixture.componentCount(Position.self) == 1)
        #expect(try fixture.componentCount(Title.self) == 1)
        #expect(engine.metrics.commitCount == 1)
        try engine.shutdown()
    }

    @Test func despawnDeletesTheEntityAndCascadesToItsComponents() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let e = engine.world.spawn(Position(x: 1, y: 1), Title("t"))
        #expect(engine.compactNow())   // into the base rows, so the cascade has something to take
        #expect(try fixture.persisted().componentCount == 2)
        #expect(try fixture.count("SELECT count(*) FROM components") == 2)
        engine.world.mutate(Position.self, of: e) { $0.x = 5 }   // pending write, dropped by the despawn
        engine.world.despawn(e)
        engine.flushNow()
        #expect(try fixture.entityCount() == 0)
        #expect(try fixture.persisted().componentCount == 0)
        #expect(try fixture.count("SELECT count(*) FROM components") == 2, "the rows wait for compaction")
        #expect(engine.metrics.componentRowsWritten == 2)
        #expect(engine.compactNow())
        #expect(try fixture.count("SELECT count(*) FROM entities") == 0)
        #expect(try fixture.count("SELECT count(*) FROM components") == 0, "the cascade took the base rows")
        try engine.shutdown()
    }

    @Test func removingAComponentDeletesItsRow() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let e = engine.world.spawn(Position(x: 1, y: 1), Title("t"))
        engine.flushNow()
        engine.world.remove(Title.self, from: e)
        engine.flushNow()
        #expect(try fixture.componentCount(Title.self) == 0)
        #expect(try fixture.componentCount(Position.self) == 1)
        try engine.shutdown()
    }

    @Test func crashDurabilityCommitsCriticalBatchesWithNormal() throws {
        var fixture = EngineFixture()
        fixture.config.persistence.criticalDurability = .crash
        let engine = try fixture.open()
        engine.world.spawn(Title("t"))
        engine.flushNow()
        #expect(engine.metrics.commitCount == 1)
        #expect(engine.metrics.fullCommitCount == 0)
        try engine.shutdown()
    }
}


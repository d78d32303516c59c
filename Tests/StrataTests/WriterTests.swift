import Foundation
import GRDB
import GRDBSQLite
import Testing
@testable import Strata
import StrataTesting

@Suite struct WriterTests {
    @Test func oneTransactionPerBatch() throws {
        var fixture = EngineFixture()
        let probe = CommitProbe()
        probe.install(on: &fixture.options)
        let engine = try fixture.open()
        let before = probe.commitCount
        for i in 0 ..< 500 {
            engine.world.spawn(Position(x: Float(i), y: 0), Title("shape \(i)"))
        }
        engine.flushNow()
        #expect(probe.commitCount - before == 1)
        #expect(try fixture.entityCount() == 500)
        #expect(try fixture.persisted().componentCount == 1000)
        try engine.shutdown()
    }

    @Test func aStalledWriterNeverStallsTheTickThread() throws {
        var fixture = EngineFixture()
        let probe = CommitProbe()
        probe.install(on: &fixture.options)
        let engine = try fixture.open()
        let entities = (0 ..< 100).map { engine.world.spawn(Position(x: Float($0), y: 0)) }
        engine.flushNow()
        let commitsBefore = probe.commitCount

        // Stall the writer inside its next commit.
        probe.stallNextCommit()
        engine.world.mutate(Position.self, of: entities[0]) { $0.y = 1 }
        engine.flush(reason: .explicitSave)
        engine.endTick()
        #expect(probe.entered.wait(timeout: .now() + 20) == .success, "the writer should be inside the stalled commit")

        // A watchdog releases the writer if the tick thread ever blocks on it.
        let watchdogFired = LockedFlag()
        let ticksDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            if ticksDone.wait(timeout: .now() + 20) == .timedOut {
                watchdogFired.set()
                probe.release.signal()
            }
        }
        for round in 0 ..< 50 {
            for e in entities { engine.world.mutate(Position.self, of: e) { $0.y = Float(round + 2) } }
            engine.flush(reason: .explicitSave)
            engine.endTick()
        }
        ticksDone.signal()
        #expect(!watchdogFired.value, "endTick waited for the stalled writer")
        #expect(engine.metrics.mergedBatches >= 48, "batches that waited merge into one")

        probe.release.signal()
        #expect(engine.waitForWriter())
        // The stalled batch and one merged batch: two commits for 51 flushes.
        #expect(probe.commitCount - commitsBefore == 2)
        #expect(try fixture.count(persisted: Position(x: 99, y: 51)) == 1)
        try engine.shutdown()
    }

    @Test func aPollingWriterFindsFlushesWithoutBeingWoken() throws {
        var fixture = EngineFixture()
        fixture.options.writerPollInterval = .milliseconds(5)
        fixture.options.writerPollLinger = .seconds(600)
        let engine = try fixture.open()
        let shape = engine.world.spawn(Position(x: 0, y: 0), Title("a"))
        engine.flushNow()   // the first batch wakes the parked writer; from now on it polls
        let wakes = engine.metrics.writerWakes
        #expect(wakes <= 1)

        for round in 1 ... 5 {
            engine.world.mutate(Position.self, of: shape) { $0.x = Float(round) }
            engine.flush(reason: .explicitSave)   // handed off, not waited for
            #expect(try eventually {
                try fixture.count(persisted: Position(x: Float(round), y: 0)) == 1
            }, "the polling writer commits the flush of round \(round)")
        }
        #expect(engine.metrics.writerWakes == wakes, "no flush had to wake the writer")
        #expect(engine.metrics.flushCount >= 6)
        try engine.shutdown()
    }

    @Test func aParkedWriterIsWokenByTheFlush() throws {
        var fixture = EngineFixture()
        fixture.options.writerPollInterval = .zero   // never poll
        let engine = try fixture.open()
        let shape = engine.world.spawn(Position(x: 0, y: 0))
        engine.flushNow()
        for round in 1 ... 3 {
            #expect(eventually { engine.buffer.isWriterParked })
            let wakes = engine.metrics.writerWakes
            engine.world.mutate(Position.self, of: shape) { $0.x = Float(round) }
            engine.flush(reason: .explicitSave)
            #expect(engine.metrics.writerWakes == wakes + 1)
            #expect(engine.waitForWriter())
        }
        try engine.shutdown()
    }

    @Test func pollsFallHalfATickAwayFromTheTicks() {
        let tick = Duration.nanoseconds(16_666_667)
        let anchor = Instant(nanoseconds: 5_000_000_000)   // a submission, at the end of a tick
        for elapsedMs in [0, 3, 16, 17, 250, 999] {
            let now = anchor + .milliseconds(elapsedMs)
            let delay = Writer.pollDelay(now: now, lastSubmission: anchor, interval: .milliseconds(100), tick: tick)
            #expect(delay <= .milliseconds(100) && delay > .milliseconds(100) - tick, "about the poll interval")
            let sinceAnchor = (now + delay).nanoseconds - anchor.nanoseconds
            #expect(abs(sinceAnchor % tick.nanoseconds - tick.nanoseconds / 2) <= 1, "mid-way between two ticks")
        }
        #expect(Writer.pollDelay(now: anchor, lastSubmission: nil, interval: .milliseconds(100), tick: tick) == .milliseconds(100))
        #expect(Writer.pollDelay(now: anchor, lastSubmission: anchor, interval: .milliseconds(10), tick: tick) == .milliseconds(10),
                "a poll shorter than a tick is not moved")
    }

    @Test func theFlushLookaheadIncludesTheWritersPoll() throws {
        var fixture = EngineFixture()
        fixture.options.writerPollInterval = .milliseconds(100)
        let polling = try fixture.open()
        let lookahead = polling.flushLookahead
        try polling.shutdown()
        fixture.options.writerPollInterval = .zero
        let woken = try fixture.open()
        #expect(lookahead - woken.flushLookahead == .milliseconds(100))
        try woken.shutdown()
    }

    @Test func failedCommitsAreRetriedWithoutLoss() throws {
        var fixture = EngineFixture()
        fixture.config.writer.busyTimeout = .milliseconds(1)
        let engine = try fixture.open()

        // Another connection takes the write lock: the writer gets SQLITE_BUSY.
        var blocker: OpaquePointer?
        #expect(sqlite3_open(fixture.directory.databasePath, &blocker) == SQLITE_OK)
        #expect(sqlite3_exec(blocker, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)

        for i in 0 ..< 50 { engine.world.spawn(Position(x: Float(i), y: 0), Title("t\(i)")) }
        engine.flush(reason: .explicitSave)
        engine.endTick()
        #expect(eventually { engine.metrics.failedCommits >= 3 })
        #expect(engine.metrics.lastWriteError?.contains("SQLite 5") == true, "SQLITE_BUSY is 5")
        #expect(try fixture.entityCount() == 0)

        // More changes arrive while the batch is failing: they merge into it.
        engine.world.spawn(Title("late"))
        engine.flush(reason: .explicitSave)
        engine.endTick()

        #expect(sqlite3_exec(blocker, "ROLLBACK", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(blocker)
        #expect(engine.waitForWriter())
        #expect(try fixture.entityCount() == 51)
        #expect(try fixture.persisted().componentCount == 101)
        #expect(engine.metrics.lostRows == 0)
        try engine.shutdown()
    }

    @Test func checkpointsWhenTheWalPassesItsLimit() throws {
        var fixture = EngineFixture()
        fixture.config.persistence.maxWalSizeBytes = 64 * 1024
        fixture.config.persistence.batteryAdaptive = false   // no desktop override
        let engine = try fixture.open()
        for i in 0 ..< 2000 { engine.world.spawn(Title(String(repeating: "x", count: 100) + "\(i)")) }
        engine.flushNow()
        #expect(engine.metrics.checkpointsByMode["PASSIVE"] == 1)
        try engine.shutdown()
    }

    /// A checkpoint interval the WAL limit cannot hold at the rate the WAL grows is said
    /// once, naming both keys; the size limit keeps the WAL bounded meanwhile.
    @Test func anIntervalTheWalLimitCannotHoldIsWarnedAboutOnce() throws {
        var fixture = EngineFixture()
        fixture.config.persistence.maxWalSizeBytes = 64 * 1024
        fixture.config.persistence.batteryAdaptive = false
        let log = CapturedLog()
        let engine = try Engine.open(config: fixture.config, components: testComponents, logger: log.logger, options: fixture.options)
        for round in 0 ..< 40 {   // 12 KB a commit, ten a second: the 64 KB limit fills in half a second
            for i in 0 ..< 100 { engine.world.spawn(Title(String(repeating: "x", count: 100) + "\(round).\(i)")) }
            engine.flushNow(reason: .majorAction)
            fixture.clock.advance(by: .milliseconds(100))
        }
        let warnings = log.messages.filter { $0.contains("checkpoint_interval_secs") }
        #expect(warnings.count == 1, "\(log.messages)")
        #expect(warnings.first?.contains("max_wal_size_mb") == true)
        #expect(engine.metrics.walPastLimitBytes == 0, "checkpoints come before the WAL passes its limit")
        #expect(engine.metrics.alerts.isEmpty, "\(engine.metrics.alerts)")
        try engine.shutdown()
    }

    /// A batch of 64k rows or more commits through a rollback journal: every page once,
    /// the WAL untouched, and the next commit in WAL mode again.
    @Test func aBulkBatchCommitsThroughARollbackJournalAndWritesItsPagesOnce() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let vfs = try #require(engine.countingVFS)
        let before = vfs.counts
        for i in 0 ..< 40_000 { engine.world.spawn(Title("t\(i)"), Position(x: Float(i), y: 0)) }
        #expect(engine.flushNow())
        let counts = vfs.counts.since(before)
        #expect(engine.metrics.bulkCommits == 1)
        #expect(counts.journal.writeBytes > 0 && counts.wal.writeBytes < 64 * 1024, "\(counts)")
        let file = try #require(try FileManager.default.attributesOfItem(atPath: fixture.directory.databasePath)[.size] as? Int)
        #expect(Double(counts.writeBytes) <= 1.2 * Double(file), "\(counts.writeBytes) bytes written for a file of \(file)")
        #expect(try fixture.count("SELECT count(*) FROM components") == 80_000, "its new entities' components are base rows")
        #expect(try fixture.count("SELECT count(*) FROM segments") == 0)
        engine.world.spawn(Title("after"))
        #expect(engine.flushNow())
        #expect(try engine.store.withConnection { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
        try engine.shutdown()
        let reopened = try fixture.open()
        #expect(reopened.world.entityCount == 40_001)
        #expect(reopened.world.count(of: Position.self) == 40_000)
        try reopened.shutdown()
    }

    /// A power cut at any moment of a bulk commit (journal written, file written, journal
    /// deleted) leaves the file as it was before the batch or after it, never between, and
    /// intact: the rollback journal is SQLite's atomic commit, the fault VFS its power loss.
    @Test(arguments: [0, 30, 80, 160, 1000])
    func aPowerCutDuringABulkCommitLeavesTheFileBeforeOrAfterIt(afterMilliseconds delay: Int) throws {
        var fixture = EngineFixture("bulk-cut-\(delay)")
        let vfs = try FaultVFS.register(name: "bulk-cut-\(UUID().uuidString)")
        fixture.options.vfs = vfs.name
        fixture.config.metrics.countFsyncs = false
        let engine = try fixture.open()
        for i in 0 ..< 10 { engine.world.spawn(Title("before \(i)")) }
        #expect(engine.flushNow())
        for i in 0 ..< 40_000 { engine.world.spawn(Title("t\(i)"), Position(x: Float(i), y: 0)) }
        let cut = DispatchSemaphore(value: 0)
        Thread {
            usleep(UInt32(delay * 1000))
            vfs.cutPower()
            cut.signal()
        }.start()
        _ = engine.flushNow(timeout: .seconds(30))
        cut.wait()
        engine.abandon()
        _ = try vfs.applyPowerLoss(delay % 20 == 0 ? .drop : .torn, seed: UInt64(delay))
        try? FileManager.default.removeItem(atPath: fixture.directory.databasePath + "-shm")

        let reopened = try fixture.open()
        #expect(reopened.recovery.setAsideCorruptFile == nil, "\(reopened.recovery.corruption ?? "")")
        #expect([10, 40_010].contains(reopened.world.entityCount), "\(reopened.world.entityCount) entities")
        #expect(reopened.world.count(of: Position.self) == reopened.world.entityCount - 10, "every spawn with its components")
        #expect(try reopened.store.verify().isEmpty)
        try reopened.shutdown()
    }

    @Test func checkpointsOnTheIntervalInVirtualTime() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.world.spawn(Title("a"))
        engine.flushNow(reason: .majorAction)
        #expect(engine.metrics.checkpointCount == 0)
        fixture.clock.advance(by: fixture.config.persistence.checkpointInterval)
        engine.world.spawn(Title("b"))
        engine.flushNow(reason: .majorAction)
        #expect(engine.metrics.checkpointsByMode["PASSIVE"] == 1)
        try engine.shutdown()
    }

    @Test func checkpointsEscalateWhenAReaderKeepsPassiveFromFinishing() throws {
        var fixture = EngineFixture()
        fixture.config.writer.busyTimeout = .milliseconds(1)
        let engine = try fixture.open()
        engine.world.spawn(Title("before the reader"))
        engine.flushNow(reason: .majorAction)

        // A reader holds a snapshot: frames after it cannot be copied back.
        var reader: OpaquePointer?
        #expect(sqlite3_open(fixture.directory.databasePath, &reader) == SQLITE_OK)
        #expect(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM entities;", nil, nil, nil) == SQLITE_OK)

        // Each round: the interval passes (the writer's timer checkpoints what the WAL holds),
        // then a commit the reader's snapshot predates.
        for round in 1 ... 5 {
            let checkpoints = engine.metrics.checkpointCount
            fixture.clock.advance(by: fixture.config.persistence.checkpointInterval)
            #expect(eventually { engine.metrics.checkpointCount == checkpoints + 1 }, "round \(round): the timer fires")
            engine.world.spawn(Title("round \(round)"))
            engine.flushNow(reason: .majorAction)
        }
        let metrics = engine.metrics
        // Round 1 copies everything back (the reader saw all of it); rounds 2 and 3 cannot
        // finish; two incomplete PASSIVE checkpoints escalate to RESTART in rounds 4 and 5.
        #expect(metrics.incompleteCheckpoints == 4)
        #expect(metrics.checkpointsByMode["PASSIVE"] == 3)
        #expect(metrics.checkpointsByMode["RESTART"] == 2, "two incomplete PASSIVE checkpoints escalate")

        sqlite3_exec(reader, "COMMIT", nil, nil, nil)
        sqlite3_close(reader)
        fixture.clock.advance(by: fixture.config.persistence.checkpointInterval)
        engine.world.spawn(Title("after the reader"))
        engine.flushNow(reason: .majorAction)
        #expect(engine.metrics.incompleteCheckpoints == metrics.incompleteCheckpoints, "with the reader gone it completes")
        try engine.shutdown()
        #expect(try fixture.entityCount() == 7)
    }

    @Test func cleanShutdownSetsTheMarkAndEmptiesTheWal() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        for i in 0 ..< 100 { engine.world.spawn(Position(x: Float(i), y: 0)) }
        try engine.shutdown()
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.cleanShutdown == true)
        #expect(inspection.cleanShutdownCount == 1)
        #expect(inspection.walBytes == 0)
        #expect(inspection.entityCount == 100)
        #expect(engine.metrics.checkpointsByMode["TRUNCATE"] == 1)
    }

    @Test func anEngineReleasedWithoutShutdownIsACrashNextTime() throws {
        let fixture = EngineFixture()
        do {
            let engine = try fixture.open()
            engine.world.spawn(Title("x"))
            engine.flushNow()
        }
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).cleanShutdown == false)
        let engine = try fixture.open()
        #expect(engine.recovery.crashed)
        #expect(engine.recovery.session.crashCount == 1)
        #expect(engine.world.entityCount == 1)
        try engine.shutdown()
    }
}

extension WriterTests {
    @Test func theSessionAfterACrashCheckpointsAtOnce() throws {
        // Sessions that crash before their first checkpoint must not let the WAL grow.
        let fixture = EngineFixture()
        for round in 0 ..< 3 {
            let engine = try fixture.open()
            for i in 0 ..< 200 { engine.world.spawn(Title("round \(round) shape \(i)")) }
            #expect(engine.flushNow())
            engine.abandon()   // a crash: no checkpoint, no truncation
        }
        let wal = StoreLocation(path: fixture.directory.databasePath)
        let engine = try fixture.open()
        #expect(engine.recovery.crashed)
        #expect(eventually { wal.walBytes == 0 }, "the WAL is checkpointed and truncated at start, \(wal.walBytes) bytes left")
        #expect(engine.world.count(of: Title.self) == 600)
        try engine.shutdown()
    }

    @Test func anEngineReleasedWithoutShutdownStopsTheThreadsItStarted() throws {
        // As abandon() does: the workers (and the sync, the monitors, the exporter) stop,
        // and the counting VFS goes back for the next open.
        let fixture = EngineFixture()
        var pool: WorkerPool?
        do {
            let engine = try fixture.open()
            engine.registerJobHandler("render") { _ in }
            engine.startWorkers(1)
            pool = engine.workers.pool
            #expect(pool?.isStopping == false)
        }
        #expect(pool?.isStopping == true)
    }
}

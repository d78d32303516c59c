import Foundation
import GRDBSQLite
import Testing
@testable import Strata

/// The writer's deadlines are instants on the engine's clock, and a virtual clock that
/// jumps wakes the writer (``StrataClock/whenAdvanced(_:)``): a test advances the clock and
/// the writer acts at once, instead of waiting the interval out in real time. Each wait
/// below is far shorter than the virtual interval it stands for.
@Suite struct WriterVirtualTimeTests {
    /// A writer that parks between batches (no polling), and no metrics exporter (its job
    /// counts, every 2 s, are requests that wake the writer): only the clock moves it.
    func parkingFixture(_ name: String = #function) -> EngineFixture {
        var fixture = EngineFixture(name)
        fixture.options.writerPollInterval = .zero
        fixture.config.metrics.exportInterval = .zero
        fixture.config.persistence.checkpointInterval = .seconds(600)
        return fixture
    }

    @Test func theCheckpointTimerFiresWhenTheClockIsAdvanced() throws {
        let fixture = parkingFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        engine.world.spawn(Title("a"))
        #expect(engine.flushNow(reason: .majorAction))   // committed, not checkpointed
        let before = engine.metrics.checkpointCount
        fixture.clock.advance(by: .seconds(601))
        #expect(eventually(timeout: .seconds(20)) { engine.metrics.checkpointCount == before + 1 },
                "the parked writer would have waited 600 s of real time for its timer")
    }

    @Test func aBackoffEndsWhenTheClockIsAdvanced() throws {
        var fixture = parkingFixture()
        fixture.config.writer.busyTimeout = .milliseconds(1)
        fixture.config.writer.retryInitialBackoff = .seconds(300)
        fixture.config.writer.retryMaxBackoff = .seconds(300)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }

        // Another connection holds the write lock: the first commit fails with SQLITE_BUSY.
        var blocker: OpaquePointer?
        #expect(sqlite3_open(fixture.directory.databasePath, &blocker) == SQLITE_OK)
        #expect(sqlite3_exec(blocker, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)
        for i in 0 ..< 10 { engine.world.spawn(Title("t\(i)")) }
        engine.flush(reason: .explicitSave)
        #expect(eventually { engine.metrics.failedCommits == 1 })
        #expect(sqlite3_exec(blocker, "ROLLBACK", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(blocker)

        #expect(engine.metrics.failedCommits == 1, "backing off: no second attempt before the clock moves")
        fixture.clock.advance(by: .seconds(301))
        #expect(eventually(timeout: .seconds(20)) { (try? fixture.entityCount()) == 10 },
                "the retry would have waited 300 s of real time")
        #expect(engine.metrics.lostRows == 0)
    }
}

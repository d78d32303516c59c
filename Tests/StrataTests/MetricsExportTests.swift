import CoreMetrics
import Foundation
import MetricsTestKit
import Testing
@testable import Strata

/// The engine's figures through swift-metrics: what a host that bootstraps a backend sees.
@Suite struct MetricsExportTests {
    func open(_ fixture: EngineFixture, _ factory: TestMetrics) throws -> Engine {
        var fixture = fixture
        fixture.options.metricsFactory = factory
        fixture.config.metrics.exportInterval = .seconds(3600)   // reported when the test says (exportMetricsNow)
        return try fixture.open()
    }

    @Test func countersGrowByWhatHappenedAndGaugesFollowTheEngine() throws {
        let factory = TestMetrics()
        let fixture = EngineFixture()
        let engine = try open(fixture, factory)
        for index in 0 ..< 10 { engine.world.spawn(Position(x: Float(index), y: 0), Title("t\(index)")) }
        #expect(engine.flushNow(reason: .majorAction))
        engine.exportMetricsNow()

        let metrics = engine.metrics
        let full = try factory.expectCounter("strata_commits_total", [("durability", "full")])
        #expect(full.totalValue == Int64(metrics.fullCommitCount))
        #expect(full.totalValue >= 1)
        #expect(try factory.expectCounter("strata_entity_rows_inserted_total").totalValue == 10)
        #expect(try factory.expectCounter("strata_flushes_total", [("reason", "major_action")]).totalValue == 1)
        #expect(try factory.expectGauge("strata_wal_size_bytes").lastValue == Double(metrics.walSizeBytes))
        #expect(try factory.expectGauge("strata_jobs", [("status", "pending")]).lastValue == 0)
        #expect(try factory.expectGauge("strata_alert", [("alert", "crash_rate")]).lastValue == 0)
        // Durations as they happened, one per commit, on the writer thread.
        let commits = try factory.expectTimer("strata_commit_duration_seconds", [("durability", "full")])
        #expect(commits.values.count == metrics.fullCommitCount)

        // A second report adds only what happened since.
        for index in 0 ..< 5 { engine.world.spawn(Position(x: Float(index), y: 1)) }
        engine.jobs.enqueueSoon("render", for: engine.world.id(of: engine.world.spawn(Title("job")))!)
        #expect(engine.flushNow())
        #expect(eventually { (try? engine.jobs.counts()[.pending]) == 1 })
        engine.exportMetricsNow()
        #expect(try factory.expectCounter("strata_entity_rows_inserted_total").totalValue == 16)
        #expect(try factory.expectCounter("strata_entity_rows_inserted_total").values.count == 2, "two increments: 10, then 6")
        #expect(try factory.expectGauge("strata_jobs", [("status", "pending")]).lastValue == 1)

        // The shutdown's own commit and the clean mark are reported too.
        engine.world.spawn(Position(x: 9, y: 9))
        try engine.shutdown()
        #expect(try factory.expectCounter("strata_entity_rows_inserted_total").totalValue == 17)
        #expect(try factory.expectGauge("strata_sessions", [("ended", "clean")]).lastValue == 1)
        #expect(try factory.expectCounter("strata_flushes_total", [("reason", "shutdown")]).totalValue == 1)
    }

    @Test func theCrashRateAlertIsAGauge() throws {
        let fixture = EngineFixture()
        let crashed = try open(fixture, TestMetrics())
        crashed.world.spawn(Position(x: 0, y: 0))
        #expect(crashed.flushNow())
        crashed.abandon()   // as a kill: the session stays marked running

        let factory = TestMetrics()
        let engine = try open(fixture, factory)
        #expect(engine.recovery.crashed)
        engine.exportMetricsNow()
        #expect(try factory.expectGauge("strata_alert", [("alert", "crash_rate")]).lastValue == 1, "1 of 1 sessions crashed")
        #expect(try factory.expectGauge("strata_sessions", [("ended", "crash")]).lastValue == 1)
        #expect(engine.metrics.alerts.contains { $0.contains("crashed") }, "the specification's alert text stays")
        try engine.shutdown()
    }

    @Test func noExportWhenTheIntervalIsZero() throws {
        let factory = TestMetrics()
        var fixture = EngineFixture()
        fixture.options.metricsFactory = factory
        fixture.config.metrics.exportInterval = .zero
        let engine = try fixture.open()
        engine.world.spawn(Position(x: 0, y: 0))
        #expect(engine.flushNow())
        try engine.shutdown()
        #expect(factory.counters.isEmpty, "no counters without an exporter")
        #expect(!factory.timers.isEmpty, "durations are still recorded as they happen")
    }
}

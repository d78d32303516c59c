import Foundation
import MetricsTestKit
import Testing
@testable import Strata
import StrataPostgres

/// Conflicts made visible: one device's value replaced by another's is counted with the gap
/// between them (live, in the metrics, and from the log), and a clock far ahead is held to
/// the documented rule, configurable, and told to the device that has it.
@Suite struct ConflictTests {
    /// A and B edit one label 100 ms apart: B's wins everywhere, and each device counts the
    /// overwrite it saw; the log says the same on both.
    @Test func anOverwriteBetweenDevicesIsCountedWithItsGap() throws {
        let factory = TestMetrics()
        let a = try Replica("conflict-a") { $0.options.metricsFactory = factory; $0.config.metrics.exportInterval = .seconds(3600) }
        let b = try Replica("conflict-b")
        let server = LoopbackServer()
        let onA = a.world.spawn(SharedLabel("first"))
        let id = try #require(a.world.id(of: onA))
        try server.deliver(from: a, to: b)
        b.tick()
        let onB = try #require(b.entity(id))
        a.tick(.seconds(20)); b.tick(.seconds(20))

        a.world.insert(SharedLabel("A's"), for: onA)
        b.wall.advance(by: .milliseconds(100))
        b.world.insert(SharedLabel("B's"), for: onB)   // replaces A's "first": an overwrite B saw at once
        #expect(a.engine.flushNow() && b.engine.flushNow())
        try server.push(from: a); try server.push(from: b)
        server.pullAll(into: a); server.pullAll(into: b)
        a.tick(); b.tick()

        #expect(a.world.get(SharedLabel.self, for: onA) == SharedLabel("B's"))
        #expect(b.world.get(SharedLabel.self, for: onB) == SharedLabel("B's"))
        let seenByA = a.engine.replicationStatus.overwrites
        #expect(seenByA.total == 1 && seenByA.under250ms == 1, "B's value replaced A's 100 ms later: \(seenByA)")
        let seenByB = b.engine.replicationStatus.overwrites
        #expect(seenByB.total == 1 && seenByB.longer == 1, "B's edit replaced A's first value, 20 s older: \(seenByB)")
        #expect(b.engine.replicationStatus.superseded == 1, "A's later-arriving edit lost: not an overwrite")

        // In the metrics, by gap.
        #expect(a.engine.metrics.replication.overwrites == seenByA)
        a.engine.exportMetricsNow()
        #expect(try factory.expectCounter("strata_replicated_overwrites_total", [("gap", "under_250ms")]).totalValue == 1)
        #expect(try factory.expectGauge("strata_replicated_held", [("reason", "too_far_ahead")]).lastValue == 0)

        // From the log: the same on both devices, as every device that holds these operations.
        try a.engine.shutdown(); try b.engine.shutdown()
        for replica in [a, b] {
            let logged = try OperationLogReader(path: replica.fixture.directory.databasePath).conflicts(now: a.wall.milliseconds,
                                                                                                      maxAheadMilliseconds: 300_000)
            #expect(logged.operations == 3)
            #expect(logged.overwrites.total == 1 && logged.overwrites.under250ms == 1, "\(replica.name): \(logged.overwrites)")
            #expect(logged.aheadOfClock == 0 && logged.unknownType == 0)
        }
        // And from the command line.
        let text = try ChildProcess.strata(["sync", "status", a.fixture.directory.databasePath])
        #expect(text.stdout.contains("conflicts     1 (1 under 250 ms apart, 0 under 1 s, 0 under 10 s, 0 longer) overwrites between devices"),
                "\(text.stdout)\(text.stderr)")
        let json = try ChildProcess.strata(["sync", "status", a.fixture.directory.databasePath, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let conflicts = try #require(object["conflicts"] as? [String: Any])
        #expect((conflicts["overwrites"] as? [String: Any])?["under250ms"] as? Int == 1, "\(conflicts)")
    }

    /// The rule for a device whose clock is an hour ahead: the others hold its edits while
    /// they are more than `max_clock_ahead_secs` ahead of their clocks (counted, reported
    /// as "stamped in the future"), then apply them, and they win over what was written in
    /// between. A larger bound takes them at once.
    @Test func aDeviceAnHourAheadIsHeldUntilTheClocksGetThereThenWins() throws {
        let hour: Int64 = 3_600_000
        let a = try Replica("ahead-a"), b = try Replica("ahead-b", wallStart: 1_800_000_000_000 + hour)
        let tolerant = try Replica("ahead-tolerant") { $0.config.sync.maxClockAhead = .seconds(7200) }
        let server = LoopbackServer()
        let onB = b.world.spawn(SharedLabel("from the future"))
        let id = try #require(b.world.id(of: onB))
        try server.deliver(from: b, to: a)
        server.pullAll(into: tolerant)
        a.tick(); tolerant.tick()
        #expect(a.entity(id).flatMap { a.world.get(SharedLabel.self, for: $0) } == nil, "held, not applied")
        #expect(a.engine.replicationStatus.heldNow == ["stamped in the future": 1])
        #expect(a.engine.replicationStatus.heldByReason == ["stamped in the future": 1])
        #expect(tolerant.world.get(SharedLabel.self, for: try #require(tolerant.entity(id))) == SharedLabel("from the future"))
        let logged = try OperationLogReader(path: b.fixture.directory.databasePath).conflicts(now: a.wall.milliseconds, maxAheadMilliseconds: 300_000)
        #expect(logged.aheadOfClock == 1 && (logged.furthestAheadMilliseconds ?? 0) >= hour - 1_000)

        // A writes the label meanwhile; once A's clock is within the bound, B's edit applies and wins.
        let onA = try #require(a.entity(id))
        a.world.insert(SharedLabel("A's, written in that hour"), for: onA)
        a.tick(.seconds(60))
        #expect(a.world.get(SharedLabel.self, for: onA) == SharedLabel("A's, written in that hour"))
        a.tick(.seconds(3_300))
        a.tick()
        #expect(a.world.get(SharedLabel.self, for: onA) == SharedLabel("from the future"))
        #expect(a.engine.replicationStatus.heldNow.isEmpty)
        #expect(a.engine.replicationStatus.overwrites.total == 1, "B's edit replaced A's")
        try a.engine.shutdown(); try b.engine.shutdown(); try tolerant.engine.shutdown()
    }

    /// A device whose clock is set back 10 minutes while it is off: its hybrid clock does
    /// not go back with it, so its next edit still wins over its last one everywhere (the
    /// sync checker found devices that kept their own newest edit while the others kept
    /// the older one, stamped higher).
    @Test func aClockSetBackWhileOffStillStampsTheNextEditAboveTheLast() throws {
        let a = try Replica("set-back-a"), b = try Replica("set-back-b")
        let server = LoopbackServer()
        let shape = a.world.spawn(SharedLabel("before"))
        let id = try #require(a.world.id(of: shape))
        try server.deliver(from: a, to: b)
        try a.engine.shutdown()
        a.wall.advance(by: .seconds(-600))
        try a.restart()
        a.world.insert(SharedLabel("after"), for: try #require(a.entity(id)))
        try server.deliver(from: a, to: b)
        b.tick()
        let operations = try a.committedOperations(after: 0)
        #expect(operations.count == 2 && operations[1].timestamp > operations[0].timestamp)
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(id))) == SharedLabel("after"))
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    /// The device whose clock is ahead learns it from the server's clock, and says so.
    @Test func aDeviceFarAheadOfTheServerSeesItInItsStatus() throws {
        let server = try PrivatePostgres()
        var fixture = EngineFixture("ahead-of-server")
        fixture.config.sync.server = server.url
        fixture.config.sync.document = "ahead"
        fixture.options.wallClock = { Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000 }
        let engine = try fixture.open()
        engine.startSync(transport: try PostgresTransport(url: server.url, document: "ahead", logger: quietLogger)) { _ in }
        #expect(eventually(timeout: .seconds(20)) { engine.sync?.clockSkew != nil })
        let ahead = try #require(engine.sync?.secondsAhead(of: engine.config.sync.maxClockAhead))
        #expect(ahead > 3_500 && ahead < 3_700, "\(ahead)")
        #expect(engine.sync?.secondsAhead(of: .seconds(7200)) == nil, "within a larger bound")
        try engine.shutdown()
    }
}

import Foundation
import Synchronization
import Testing
@testable import Strata

/// The disk-space guard: below `min_free_disk_mb`, derived batches wait in memory and
/// critical ones are still committed; when space returns, everything is.
@Suite struct DiskSpaceTests {
    /// A disk whose free space the test sets.
    final class Disk: Sendable {
        let free = Atomic<Int>(1 << 40)
        var probe: @Sendable (String) -> Int? { { [self] _ in free.load(ordering: .relaxed) } }
    }

    func fixture(_ disk: Disk, _ name: String = #function) -> EngineFixture {
        var fixture = EngineFixture(name)
        fixture.config.writer.minFreeDiskBytes = 10 * 1024 * 1024
        fixture.options.freeDiskSpace = disk.probe
        return fixture
    }

    /// Runs ticks until the derived interval has passed (a derived flush is handed off).
    func passDerivedInterval(_ engine: Engine, _ fixture: EngineFixture) {
        fixture.clock.advance(by: engine.derivedInterval + .seconds(1))
        engine.endTick()
    }

    @Test func derivedWaitsCriticalGoesAndSpaceReturningWritesTheRest() throws {
        let disk = Disk()
        let fixture = fixture(disk)
        let engine = try fixture.open()
        let shape = engine.world.spawn(Position(x: 0, y: 0))
        #expect(engine.flushNow())
        #expect(try fixture.componentCount(Position.self) == 1)

        disk.free.store(1024 * 1024, ordering: .relaxed)   // 1 MB left
        engine.world.mutate(Position.self, of: shape) { $0.x = 1 }
        passDerivedInterval(engine, fixture)
        #expect(eventually { engine.metrics.batchesHeldForDiskSpace > 0 })
        #expect(engine.metrics.lowDiskSpace)
        #expect(engine.metrics.freeDiskBytes == 1024 * 1024)
        #expect(try fixture.count(persisted: Position(x: 1, y: 0)) == 0, "the derived change waits")

        // A critical change goes to disk, and takes the waiting derived one with it.
        engine.world.spawn(Title("urgent"))
        fixture.clock.advance(by: fixture.config.persistence.criticalFlushDelay)
        engine.endTick()
        #expect(engine.waitForWriter(timeout: .seconds(10)))
        #expect(try fixture.componentCount(Title.self) == 1)
        #expect(try fixture.count(persisted: Position(x: 1, y: 0)) == 1)

        // Derived only again: held; then the space returns and it is written.
        engine.world.mutate(Position.self, of: shape) { $0.x = 2 }
        passDerivedInterval(engine, fixture)
        let held = engine.metrics.batchesHeldForDiskSpace
        #expect(eventually { engine.metrics.batchesHeldForDiskSpace > held })
        disk.free.store(1 << 40, ordering: .relaxed)
        #expect(engine.waitForWriter(timeout: .seconds(10)))
        #expect(try fixture.count(persisted: Position(x: 2, y: 0)) == 1)
        #expect(!engine.metrics.lowDiskSpace)
        try engine.shutdown()
    }

    @Test func shutdownWritesWhatWaitsEvenWhenSpaceIsLow() throws {
        let disk = Disk()
        let fixture = fixture(disk)
        let engine = try fixture.open()
        disk.free.store(0, ordering: .relaxed)
        let shape = engine.world.spawn(Position(x: 0, y: 0))
        engine.world.mutate(Position.self, of: shape) { $0.x = 7 }
        try engine.shutdown()
        #expect(try fixture.count(persisted: Position(x: 7, y: 0)) == 1)
        #expect(try DatabaseInspection.inspect(path: fixture.directory.databasePath).cleanShutdown == true)
    }

    @Test func theRealFilesystemIsRead() throws {
        // statvfs, not a probe: a threshold no disk meets makes the space "low".
        var fixture = EngineFixture()
        fixture.config.writer.minFreeDiskBytes = Int.max / 2
        let engine = try fixture.open()
        engine.world.spawn(Title("t"))
        #expect(engine.flushNow())
        let free = try #require(engine.metrics.freeDiskBytes)
        #expect(free > 0)
        #expect(engine.metrics.lowDiskSpace)
        #expect(try fixture.componentCount(Title.self) == 1, "critical work is committed regardless")
        try engine.shutdown()
    }
}

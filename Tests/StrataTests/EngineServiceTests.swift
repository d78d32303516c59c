import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing
@testable import Strata
import StrataServiceLifecycle

/// The engine as a swift-service-lifecycle `Service` in a real `ServiceGroup`.
///
/// The group runs on a thread of its own (a task executor): under the full suite, other
/// tests block the cooperative pool's two threads for seconds at a time, and the group's
/// tasks waited behind them past the time limit (the first full run found it).
@Suite struct EngineServiceTests {
    static func run(_ group: ServiceGroup, on executor: SyncExecutor) -> Task<Void, any Error> {
        Task(executorPreference: executor) { try await group.run() }
    }

    static func config(_ directory: TestDirectory) -> StrataConfig {
        var config = StrataConfig()
        config.database.path = directory.databasePath
        config.simulation.tickHz = 200
        config.persistence.flushInterval = .seconds(3600)     // nothing derived is written before the shutdown
        config.persistence.batteryAdaptive = false
        return config
    }

    @Test(.timeLimit(.minutes(5))) func aGracefulShutdownFlushesEveryTickCheckpointsAndMarksTheSessionClean() async throws {
        let directory = TestDirectory()
        let config = Self.config(directory)
        let ticks = Atomic<Int>(0)
        let service = EngineService(config: config, components: testComponents, logger: quietLogger, monitors: false,
                                    setUp: { engine in engine.world.spawn(Title("service"), Position(x: 0, y: 0)) },
                                    tick: { engine in
                                        let world = engine.world
                                        let player = world.entities(with: Position.self)[0].entity
                                        world.mutate(Position.self, of: player) { $0.x += 1 }
                                        ticks.add(1, ordering: .relaxed)
                                    })
        let group = ServiceGroup(services: [service], logger: quietLogger)
        let executor = SyncExecutor(name: "test.service-group")
        defer { executor.stop() }
        let running = Self.run(group, on: executor)
        // Waits without blocking a thread of the cooperative pool (the group runs on it).
        let deadline = ContinuousClock.now + .seconds(60)
        while ticks.load(ordering: .relaxed) < 50 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(ticks.load(ordering: .relaxed) >= 50)
        await group.triggerGracefulShutdown()
        try await running.value
        let ticked = ticks.load(ordering: .relaxed)

        // The WAL was checkpointed and truncated by the shutdown; the next open finds a clean session.
        let wal = (try? FileManager.default.attributesOfItem(atPath: directory.databasePath + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0)
        let engine = try Engine.open(config: config, components: testComponents, logger: quietLogger)
        defer { try? engine.shutdown() }
        #expect(!engine.recovery.crashed)
        let reloaded = engine.world.entities(with: Position.self)
        #expect(reloaded.count == 1)
        #expect(reloaded.first?.value.x == Float(ticked), "every tick's change, derived ones too: the shutdown flushed them")
        #expect(engine.world.count(of: Title.self) == 1)
    }

    @Test(.timeLimit(.minutes(5))) func aTickThatThrowsEndsTheServiceAfterACleanShutdown() async throws {
        struct Broken: Error {}
        let directory = TestDirectory()
        let config = Self.config(directory)
        let ticks = Atomic<Int>(0)
        let service = EngineService(config: config, components: testComponents, logger: quietLogger, monitors: false,
                                    tick: { engine in
                                        engine.world.spawn(Title("tick"))
                                        if ticks.add(1, ordering: .relaxed).newValue == 10 { throw Broken() }
                                    })
        let executor = SyncExecutor(name: "test.service-group")
        defer { executor.stop() }
        let running = Self.run(ServiceGroup(services: [service], logger: quietLogger), on: executor)
        await #expect(throws: (any Error).self) { try await running.value }
        let engine = try Engine.open(config: config, components: testComponents, logger: quietLogger)
        defer { try? engine.shutdown() }
        #expect(!engine.recovery.crashed)
        #expect(engine.world.count(of: Title.self) == 10, "the failing tick's own spawn too")
    }
}

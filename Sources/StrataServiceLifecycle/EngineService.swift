import Foundation
import Logging
import ServiceLifecycle
import Strata
import Synchronization

/// An engine run as a swift-service-lifecycle `Service`: a host puts it in a
/// `ServiceGroup` next to its other services, and SIGTERM (or the group's graceful
/// shutdown) ends it with a final flush, a checkpoint and the clean-shutdown mark.
///
/// ```swift
/// let game = EngineService(config: config, components: [Transform.self], logger: logger) { engine in
///     simulate(engine.world)                  // one fixed tick; the service calls endTick()
/// }
/// let group = ServiceGroup(services: [game, httpServer], gracefulShutdownSignals: [.sigterm, .sigint],
///                          logger: logger)
/// try await group.run()
/// ```
///
/// `run()` opens the document (the writer thread starts with it), attaches the power and
/// memory-pressure monitors when asked, and runs the fixed-tick loop on a thread of its
/// own (`strata.tick`): the engine and its world belong to one thread, which the
/// cooperative pool does not give a task. Everything the host does to the world happens
/// in `setUp` and `tick`, on that thread. A graceful shutdown or a cancelled task ends
/// the loop after the current tick; `run()` returns once the engine has shut down
/// (or throws what the shutdown threw: the session is then reported as a crash next time).
public struct EngineService: Service {
    public typealias Body = @Sendable (Engine) throws -> Void

    let config: StrataConfig
    let components: [any Component.Type]
    let logger: Logger
    let options: Engine.Options
    let monitors: Bool
    let setUp: Body
    let tick: Body

    /// - Parameters:
    ///   - config: the engine's configuration; its `[simulation] tick_hz` is the loop's rate.
    ///   - monitors: attach UPower's power monitor and the memory-pressure monitor.
    ///   - setUp: once, after the open (spawn a new world, register job handlers…).
    ///   - tick: every tick; the service calls ``Engine/endTick()`` after it. A throw ends
    ///     the service (after a clean shutdown) with that error.
    public init(config: StrataConfig, components: [any Component.Type], logger: Logger = Logger(label: "strata"),
                options: Engine.Options = Engine.Options(), monitors: Bool = true,
                setUp: @escaping Body = { _ in }, tick: @escaping Body) {
        self.config = config
        self.components = components
        self.logger = logger
        self.options = options
        self.monitors = monitors
        self.setUp = setUp
        self.tick = tick
    }

    public func run() async throws {
        let loop = TickLoop(service: self)
        try await withTaskCancellationOrGracefulShutdownHandler {
            try await loop.run()
        } onCancelOrGracefulShutdown: {
            loop.requestStop()
        }
    }
}

/// The tick thread of an ``EngineService``: open, loop, shut down.
final class TickLoop: Sendable {
    let service: EngineService
    private let stopRequested = Atomic<Bool>(false)

    init(service: EngineService) {
        self.service = service
    }

    func requestStop() {
        stopRequested.store(true, ordering: .relaxed)
    }

    /// Runs the thread and waits for it without blocking a cooperative thread.
    func run() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let thread = Thread { [self] in
                continuation.resume(with: Result { try loop() })
            }
            thread.name = "strata.tick"
            thread.start()
        }
    }

    private func loop() throws {
        let service = service
        let engine = try Engine.open(config: service.config, components: service.components, logger: service.logger,
                                     options: service.options)
        if service.monitors {
            engine.attach(PowerMonitor(config: service.config.persistence.power, logger: service.logger))
            engine.attach(MemoryPressureMonitor(thresholdPercent: service.config.persistence.memoryPressurePercent,
                                                pollInterval: service.config.persistence.memoryPollInterval,
                                                logger: service.logger))
        }
        var failure: (any Error)?
        do {
            try service.setUp(engine)
            let period = 1.0 / Double(service.config.simulation.tickHz)
            var next = Date()
            while !stopRequested.load(ordering: .relaxed) {
                try service.tick(engine)
                engine.endTick()
                next += period
                let wait = next.timeIntervalSinceNow
                if wait > 0 {
                    Thread.sleep(forTimeInterval: wait)
                } else if wait < -1 {
                    next = Date()   // a stall of more than a second: do not run the missed ticks back to back
                }
            }
        } catch {
            failure = error
        }
        service.logger.info("strata: shutting down (final flush, checkpoint, clean mark)")
        try engine.shutdown()
        if let failure { throw failure }
    }
}

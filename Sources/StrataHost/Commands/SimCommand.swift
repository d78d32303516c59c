import ArgumentParser
import Foundation
import Logging
import Strata
import StrataCanvas
import StrataPostgres

struct SimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run the drawing-canvas simulation on a fixed-tick loop, persisted by Strata.",
        discussion: """
            Shapes are created, deleted and dragged, strokes drawn and the document's metadata \
            edited, on a seeded script. SIGINT or SIGTERM shut down cleanly; after a crash the next \
            start says so and what it recovered.
            """)

    @Option(help: "The TOML config file (defaults apply when it is absent and not given).")
    var config: String?

    @Option(help: "The database file (overrides [database] path).")
    var db: String?

    @Option(help: "Switch between these documents, comma-separated (the first opens first; replaces --db).")
    var documents: String?

    @Option(name: .customLong("switch-every"), parsing: .unconditional, help: "Seconds between document switches (with --documents).")
    var switchEvery = 10.0

    @Option(parsing: .unconditional, help: "Stop after this many seconds (default: run until SIGINT/SIGTERM).")
    var duration: Double?

    @Option(parsing: .unconditional, help: "Number of shapes the canvas grows to.")
    var entities = 1000

    @Option(name: .customLong("grow-over"), parsing: .unconditional, help: "Seconds the canvas takes to grow to its shapes.")
    var growOver = 5.0

    @Option(parsing: .unconditional, help: "Tick rate (overrides [simulation] tick_hz).")
    var hz: Int?

    @Option(parsing: .unconditional, help: "Seed of the scenario's script.")
    var seed: UInt64 = 1

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .notice

    @Option(name: .customLong("trace-critical"), help: ArgumentHelp("Append every critical change to this file (for crash tests).", visibility: .hidden))
    var traceCritical: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Multiplies the rate of every action (strata torture runs busy canvases).", visibility: .hidden))
    var activity = 1.0

    @Option(help: "Sync the document through this sync service or PostgreSQL server (overrides [sync] server), e.g. https://sync.example.com or postgresql://me@/strata?host=/run/postgresql.")
    var sync: String?

    @Option(name: .customLong("token-file"), help: "The sync service's bearer token, in this file (overrides [sync] token_file).")
    var tokenFile: String?

    @Option(name: .customLong("sync-document"), help: "The shared document's name on the server (overrides [sync] document).")
    var syncDocument: String?

    @Option(name: .customLong("metrics-port"), parsing: .unconditional,
            help: "Serve the engine's metrics to Prometheus at http://127.0.0.1:PORT/metrics (0: any free port, printed).")
    var metricsPort: Int?

    @Option(name: .customLong("sync-settle"), parsing: .unconditional,
            help: "With a sync and --duration: when the time is up, stop editing and keep syncing this many seconds before shutting down.")
    var syncSettle = 2.0

    @Option(name: .customLong("trace-jobs"), help: ArgumentHelp("Append a line for every thumbnail rendered to this file (for crash tests).", visibility: .hidden))
    var traceJobs: String?

    @Flag(name: .customLong("power-cuts"), help: ArgumentHelp("Run through the fault VFS; SIGUSR2 cuts the power (the sync checker).", visibility: .hidden))
    var powerCuts = false

    @Option(name: .customLong("clock-offset"), parsing: .unconditional,
            help: ArgumentHelp("Seconds added to the engine's wall clock: a device whose clock is set wrong (the sync checker).", visibility: .hidden))
    var clockOffset = 0.0

    @Option(name: .customLong("trace-operations"), help: ArgumentHelp("Append a line each time this device's operations reach a new sequence (the sync checker).", visibility: .hidden))
    var traceOperations: String?

    func validate() throws {
        if let duration, !(duration > 0 && duration <= Self.maxDuration) {
            throw ValidationError("--duration must be a positive number of seconds, at most \(Int(Self.maxDuration)) (omit it to run until stopped)")
        }
        if !(0 ... Self.maxEntities).contains(entities) {
            throw ValidationError("--entities must be between 0 and \(Self.maxEntities)")
        }
        if !(growOver >= 0 && growOver <= Self.maxDuration) {
            throw ValidationError("--grow-over must be between 0 and \(Int(Self.maxDuration)) seconds")
        }
        if !(activity > 0 && activity <= 1000) { throw ValidationError("--activity must be above 0 and at most 1000") }
        if let hz, !(1 ... 1000).contains(hz) { throw ValidationError("--hz must be between 1 and 1000") }
        if let documents {
            let paths = documentPaths(documents)
            if paths.count < 2 || Set(paths).count != paths.count {
                throw ValidationError("--documents needs two or more different paths, comma-separated")
            }
            if db != nil { throw ValidationError("--documents replaces --db: give one or the other") }
        }
        if sync != nil && documents != nil { throw ValidationError("--sync syncs one document: it cannot be combined with --documents") }
        if !(abs(clockOffset) <= 86_400 * 365) { throw ValidationError("--clock-offset must be within a year either way") }
        if !(syncSettle >= 0 && syncSettle <= 3600) { throw ValidationError("--sync-settle must be between 0 and 3600 seconds") }
        if let metricsPort, !(0 ... 65535).contains(metricsPort) { throw ValidationError("--metrics-port must be between 0 and 65535") }
        if !(switchEvery > 0 && switchEvery <= Self.maxDuration) { throw ValidationError("--switch-every must be a positive number of seconds, at most \(Int(Self.maxDuration))") }
    }

    /// About three years; a longer run is "until stopped" (leave --duration out).
    static let maxDuration = 1e8
    /// The canvas grows to at most this many shapes.
    static let maxEntities = 10_000_000

    /// The paths of `--documents`, as the engine names them (absolute, standardized): `a.db`
    /// and `./a.db` are one document.
    private func documentPaths(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            .map { StoreLocation(path: $0).path }
    }

    func run() throws {
        let launched = MonotonicClock().now()   // the start a big document's open is measured from
        ignoreBrokenPipes()
        // Before the document is opened: a stop signal from now on is a clean shutdown,
        // never a process killed between the session mark and the handlers.
        let signals = SignalFlags(handleSuspend: true)
        bootstrapLogging(level: logLevel)
        let logger = Logger(label: "strata")
        var config = try loadConfig(self.config, command: "sim")
        if let db { config.database.path = db }
        let rotation = documents.map(documentPaths)
        if let first = rotation?.first { config.database.path = first }
        if let hz { config.simulation.tickHz = hz }
        if let sync { config.sync.server = sync }
        if let syncDocument { config.sync.document = syncDocument }
        if let tokenFile { config.sync.tokenFile = tokenFile }
        let syncing = !config.sync.server.isEmpty
        if syncing {
            // A server that cannot be right is refused before the document is touched.
            do {
                try SimTransport.check(config.sync)
            } catch {
                printError("strata sim: \(sync != nil ? "--sync" : "[sync] server"): \(error)")
                throw ExitCode(64)
            }
        }

        // Before the engine opens: its metrics are made through the factory bootstrapped here.
        let metricsServer: MetricsServer?
        do {
            metricsServer = try metricsPort.map { try MetricsServer.start(port: $0) }
        } catch {
            printError("strata sim: --metrics-port: \(error)")
            throw ExitCode.failure
        }
        defer { metricsServer?.stop() }
        if let metricsServer { say("strata sim: metrics at http://127.0.0.1:\(metricsServer.port)/metrics") }

        let faults: DeviceFaults
        do {
            faults = try DeviceFaults(powerCuts: powerCuts, traceOperations: traceOperations, clockOffset: clockOffset, seed: seed)
        } catch {
            printError("strata sim: --power-cuts/--trace-operations: \(error)")
            throw ExitCode.failure
        }
        var engine: Engine
        do {
            var options = Engine.Options()
            options.stopWaiting = { signals.stopWaiting }   // no wait on the engine outlives a stop signal
            faults.configure(&options)
            engine = try Engine.open(config: config, components: canvasComponents, logger: logger, options: options)
        } catch let error as StoreError {
            printError("strata sim: cannot open the database: \(error)")
            throw ExitCode.failure
        }
        let openedAfter = MonotonicClock().now().duration(since: launched)
        say("strata sim: \(engine.store.location.path)")
        // Which pages the commits write, for the summary's pages per commit by table.
        let pages = PageTally()
        pages.watch(engine)
        let storageBefore = ProcessIO.writeBytes
        if engine.recovery.crashed || engine.recovery.setAsideCorruptFile != nil {
            say("strata sim: the previous session crashed.")
        }
        for line in engine.recovery.description.split(separator: "\n") { say("  \(line)") }

        engine.attach(PowerMonitor(config: config.persistence.power, logger: logger))
        engine.attach(MemoryPressureMonitor(thresholdPercent: config.persistence.memoryPressurePercent,
                                            pollInterval: config.persistence.memoryPollInterval, logger: logger))

        let trace = try traceCritical.map { try CriticalTrace(path: $0) }
        let makeScenario = { (engine: Engine) in
            // Thumbnails of finished strokes, rendered by the engine's workers.
            Thumbnails.start(on: engine, trace: traceJobs)
            Thumbnails.catchUp(engine)
            return CanvasScenario(engine: engine, targetShapes: entities, hz: config.simulation.tickHz, seed: seed, trace: trace,
                                  activity: activity, syncing: syncing, growSeconds: growOver)
        }
        var scenario = makeScenario(engine)
        if syncing {
            let transport: any SyncTransport
            do {
                transport = try SimTransport.make(config.sync, logger: logger)
            } catch {
                printError("strata sim: [sync] server: \(error)")
                try? engine.shutdown()
                throw ExitCode(64)
            }
            var network: NetworkMonitor?
            if config.sync.networkSource == .networkmanager {
                network = NetworkMonitor(timeout: config.persistence.power.dbusTimeout, logger: logger)
                network?.start()
            }
            let canvas = scenario
            engine.startSync(transport: transport, network: network) { canvas.apply($0) }
            say("strata sim: syncing \"\(config.sync.document)\" through \(config.sync.server)")
        }
        var tried = 0   // the index in --documents of the last document opened or tried
        let outcome = runLoop(engine: &engine, scenario: &scenario, signals: signals, config: config, pages: pages, faults: faults,
                              launched: launched) { engine, now in
            // Every --switch-every seconds, the next document of --documents; one that cannot
            // open is skipped (the one after it is tried next time), and so is the open one.
            guard let rotation else { return nil }
            tried = (tried + 1) % rotation.count
            if rotation[tried] == engine.store.location.path { tried = (tried + 1) % rotation.count }
            let target = rotation[tried]
            do {
                pages.take(from: engine)
                let next = try engine.switchDocument(to: target)
                pages.watch(next)
                say("strata sim: switched to \(next.store.location.path) (\(next.world.entityCount) entities)")
                return (next, makeScenario(next))
            } catch {
                printError("strata sim: could not switch to \(target), staying on \(engine.store.location.path): \(error)")
                return nil
            }
        }

        func summary(_ stopReason: String) -> String {
            pages.take(from: engine)
            return StatusLine.summary(engine: engine, ticks: outcome.ticks, elapsed: outcome.elapsed, droppedTicks: outcome.dropped,
                                      maxTick: outcome.maxTick, stopReason: stopReason, pages: pages.byTree(of: engine),
                                      storageBytes: ProcessIO.writeBytes.flatMap { after in storageBefore.map { after - $0 } },
                                      start: (opened: openedAfter, firstTick: outcome.firstTick))
                + (HistoryProbe.line(engine).map { "\n" + $0 } ?? "")
        }
        signals.shutdownBegins()   // from here on, another stop signal cuts the shutdown's waits short
        do {
            try engine.shutdown()
        } catch {
            printError("strata sim: shutdown could not finish: \(error)")
            say(summary(outcome.reason))
            throw ExitCode.failure
        }
        say(summary(outcome.reason + ", shut down cleanly"))
    }

    private struct Outcome {
        var ticks = 0
        var elapsed: Duration = .zero
        var dropped = 0
        var maxTick: Duration = .zero
        var reason = ""
        /// From the process's start to the end of its first tick.
        var firstTick: Duration?
    }

    /// The fixed-tick loop: run the ticks the accumulator owes, end each with
    /// `engine.endTick()`, redraw the status line, sleep until the next tick is due.
    /// `switchDocument` is asked every `--switch-every` seconds for another engine and
    /// scenario to go on with (nil: stay).
    private func runLoop(engine: inout Engine, scenario: inout CanvasScenario, signals: SignalFlags, config: StrataConfig,
                         pages: PageTally, faults: DeviceFaults, launched: Instant, switchDocument: (Engine, Instant) -> (Engine, CanvasScenario)?) -> Outcome {
        let clock = MonotonicClock()
        var timestep = FixedTimestep(hz: config.simulation.tickHz, maxCatchUp: config.simulation.maxCatchUpTicks)
        let status = StatusLine()
        let start = clock.now()
        let end = duration.map { start + .nanoseconds(Int64($0 * 1e9)) }
        var previous = start
        var lastStatus = start
        var statusTicks = 0
        var outcome = Outcome()
        let switchInterval = Duration.nanoseconds(Int64(switchEvery * 1e9))
        var nextSwitch = start + switchInterval
        var settleUntil: Instant?

        while true {
            if let sig = signals.stopSignal {
                outcome.reason = sig == SIGINT ? "interrupted (SIGINT)" : sig == SIGHUP ? "hung up (SIGHUP)" : "terminated (SIGTERM)"
                break
            }
            if signals.takeSuspendRequest() {
                // Ctrl-Z: an app going to the background. Flush, checkpoint, then stop.
                status.clear()
                let saved = engine.willEnterBackground()
                say("strata sim: suspended (\(saved ? "every tier saved" : "the flush did not finish in time"))")
                raise(SIGSTOP)
                previous = clock.now()   // resumed: no catch-up for the time stopped
                continue
            }
            let now = clock.now()
            if let end, now >= end {
                if engine.sync != nil, syncSettle > 0, settleUntil == nil {
                    // Editing stops; the sync goes on, so every device ends with every operation.
                    scenario.finishEdits()
                    settleUntil = now + .nanoseconds(Int64(syncSettle * 1e9))
                }
                if let settleUntil, now < settleUntil {
                    // Ticks go on (they take the pulled operations), without edits.
                } else {
                    outcome.reason = "ran for \(duration ?? 0) s" + (settleUntil == nil ? "" : ", then synced for \(syncSettle) s")
                    break
                }
            }
            let steps = timestep.advance(by: now.duration(since: previous))
            previous = now
            for _ in 0 ..< steps {
                let tickStart = clock.now()
                if settleUntil == nil { scenario.step() }
                engine.endTick()
                faults.afterTick(engine)
                outcome.maxTick = max(outcome.maxTick, clock.now().duration(since: tickStart))
                outcome.ticks += 1
                if outcome.firstTick == nil { outcome.firstTick = clock.now().duration(since: launched) }
            }
            if now >= nextSwitch {
                status.clear()
                if let (next, nextScenario) = switchDocument(engine, now) {
                    engine = next
                    scenario = nextScenario
                }
                nextSwitch = clock.now() + switchInterval
                previous = clock.now()   // the switch's own time is not owed as ticks
            }
            if now.duration(since: lastStatus) >= .milliseconds(250) {
                let rate = Double(outcome.ticks - statusTicks) / now.duration(since: lastStatus).seconds
                status.draw(engine: engine, tickRate: rate, ticks: outcome.ticks)
                pages.take(from: engine)
                lastStatus = now
                statusTicks = outcome.ticks
            }
            let wait = timestep.untilNextTick - clock.now().duration(since: now)
            if wait > .zero { usleep(UInt32(max(1, wait.nanoseconds / 1000))) }
        }
        status.clear()
        outcome.elapsed = clock.now().duration(since: start)
        outcome.dropped = timestep.droppedTicks
        return outcome
    }
}

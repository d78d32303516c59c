import Foundation
import GRDB
import Testing
@testable import Strata

/// Mirrors of the canvas types `strata sim` writes, to read its database back.
struct CanvasDocument: Component {
    static let typeName = "canvas.document"
    static let tier = Tier.critical
    var name: String, revision: Int, modifiedAtMs: Int
    func encode(to p: inout PayloadWriter) { p.write(name); p.write(revision); p.write(modifiedAtMs) }
    init(from p: inout PayloadReader, version: Int) throws { name = try p.read(); revision = try p.read(); modifiedAtMs = try p.read() }
}

/// One line of `strata sim --trace-critical`.
struct TraceLine {
    var instant: Instant
    var operation: String
    var entity: String
    var revision: Int?

    static func read(_ path: String) -> [TraceLine] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        // The last line may be cut short by the kill: keep only complete lines.
        return text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(text.hasSuffix("\n") ? 0 : 1).compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count >= 3, let ns = Int64(parts[0]) else { return nil }
            return TraceLine(instant: Instant(nanoseconds: ns), operation: String(parts[1]), entity: String(parts[2]),
                             revision: parts.count > 3 ? Int(parts[3]) : nil)
        }
    }
}

@Suite(.serialized) struct CrashTests {

    @Test func aKilledSimIsDetectedAndKeepsEveryCriticalChangeOlderThanTheDelay() throws {
        let directory = TestDirectory()
        let tracePath = directory.url.appendingPathComponent("critical.trace").path
        let sim = try startSim(directory, ["--entities", "300", "--seed", "7", "--trace-critical", tracePath])
        try killWhenBusy(sim, tracePath: tracePath)
        try checkAfterKill(directory, tracePath: tracePath, killedAt: MonotonicClock().now(), sessions: 1)
    }

    /// The same, with compaction running all the time (caps of a KB, 1 ms steps) while a
    /// world of 5,000 shapes grows, twice over: each kill comes after this cycle's
    /// compaction has run steps, between two of them or inside one. (That a step cut
    /// short commits nothing is also proven one step at a time by
    /// `SegmentReplayTests.compactionInterruptedAtEveryStepLosesAndDuplicatesNothing`.)
    @Test func aSimKilledWhileCompactingLosesNothingAndDuplicatesNothing() throws {
        let directory = TestDirectory()
        let config = directory.url.appendingPathComponent("compacting.toml")
        try """
            [compaction]
            idle_backlog_mb = 0.001
            backlog_mb = 0.001
            max_backlog_mb = 0.004
            step_budget_ms = 1
            """.write(to: config, atomically: true, encoding: .utf8)
        for cycle in 1 ... 2 {
            let tracePath = directory.url.appendingPathComponent("critical-\(cycle).trace").path
            let stepsBefore = (try? DatabaseInspection.inspect(path: directory.databasePath).compactionSteps) ?? 0
            let sim = try startSim(directory, ["--config", config.path, "--entities", "5000", "--seed", "\(cycle)",
                                               "--trace-critical", tracePath])
            try killWhenBusy(sim, tracePath: tracePath, requireDespawn: false) {
                ((try? DatabaseInspection.inspect(path: directory.databasePath).compactionSteps) ?? 0) > stepsBefore + 2
            }
            try checkAfterKill(directory, tracePath: tracePath, killedAt: MonotonicClock().now(), sessions: cycle)
        }
        #expect(try DatabaseInspection.inspect(path: directory.databasePath).compactions > 2)
    }

    /// Waits until the sim has made critical changes (spawns, despawns, metadata) for a
    /// few seconds of its own time, has received its peer's operations for two seconds
    /// (its own are the engine's, for its replicated components: not traced), and `also`
    /// holds; then kills it with SIGKILL.
    func killWhenBusy(_ sim: Process, tracePath: String, requireDespawn: Bool = true, also: () -> Bool = { true }) throws {
        let running = eventually(timeout: .seconds(60)) {
            let lines = TraceLine.read(tracePath)
            guard let first = lines.first, let last = lines.last else { return false }
            let operationsByNode = Dictionary(grouping: lines.filter { $0.operation == "operation" }, by: \.entity)
            return last.instant.duration(since: first.instant) > .seconds(4)
                && !operationsByNode.isEmpty
                && operationsByNode.values.allSatisfy { last.instant.duration(since: $0[0].instant) > .seconds(2) }
                && (!requireDespawn || lines.contains { $0.operation == "despawn" })
                && lines.contains { $0.operation == "metadata" } && also()
        }
        #expect(running, "strata sim made no progress")
        kill(sim.processIdentifier, SIGKILL)
        sim.waitUntilExit()
        #expect(sim.terminationReason == .uncaughtSignal)
    }

    /// After a kill at `killedAt`: the next open detects the crash, the file is intact,
    /// every critical change older than the critical delay is in it, and no shape lost
    /// a component it was spawned with. `sessions`: the crashes (and clean shutdowns, by
    /// this check's own engine) the file has seen, this one included.
    func checkAfterKill(_ directory: TestDirectory, tracePath: String, killedAt: Instant, sessions: Int) throws {
        let before = try DatabaseInspection.inspect(path: directory.databasePath)
        #expect(before.cleanShutdown == false)

        var config = StrataConfig()
        config.database.path = directory.databasePath
        let engine = try Engine.open(config: config, components: [CanvasDocument.self, CanvasStrokeStyle.self], logger: quietLogger)
        #expect(engine.recovery.crashed)
        #expect(engine.recovery.session.crashCount == sessions)
        #expect(engine.recovery.session.integrity == "ok")
        #expect(engine.recovery.loaded.unknownTypeRows > 0, "shapes' rows are kept though this engine does not load them")
        #expect(engine.recovery.loaded.unreadableSegments == 0)

        let integrity = try engine.store.withConnection { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"])

        // Every critical change older than the critical delay at the kill is in the database.
        let cutoff = killedAt - config.persistence.criticalFlushDelay
        let trace = TraceLine.read(tracePath)
        let old = trace.filter { $0.instant < cutoff }
        #expect(old.count > 10)
        let world = engine.world
        var checked = 0
        for (entity, ops) in Dictionary(grouping: trace, by: \.entity) {
            let id = try #require(UUID(uuidString: entity)).entityID
            let oldOps = ops.filter { $0.instant < cutoff }
            let newOps = ops.filter { $0.instant >= cutoff }
            guard let lastOld = oldOps.last else { continue }
            checked += 1
            let present = world.entity(for: id) != nil
            switch lastOld.operation {
            case "spawn" where !newOps.contains { $0.operation == "despawn" }:
                #expect(present, "spawned \(entity) before the cutoff, missing")
            case "despawn":
                #expect(!present, "despawned \(entity) before the cutoff, still there")
            case "metadata":
                let revision = try #require(world.entity(for: id).flatMap { world.get(CanvasDocument.self, for: $0) }?.revision)
                #expect(revision >= lastOld.revision!, "document revision \(revision) older than \(lastOld.revision!)")
            case "stroke_end":
                let style = world.entity(for: id).flatMap { world.get(CanvasStrokeStyle.self, for: $0) }
                #expect(style?.finished == true, "stroke \(entity) ended before the cutoff, not saved as finished")
            default:
                break
            }
        }
        #expect(checked > 10)

        // Every operation logged before the cutoff, the sim's own and its peer's, is in the
        // log, and the vector clock rebuilt from it covers the sim's own.
        let logged = Set(try engine.store.withConnection { db in
            try Row.fetchAll(db, sql: "SELECT node, seq FROM operation_log").map { row in
                "\((row["node"] as Data).withUnsafeBytes { NodeID(bytes: $0)! }):\(row["seq"] as Int64)"
            }
        })
        let oldOperations = old.filter { $0.operation == "operation" }
        #expect(oldOperations.contains { $0.entity != engine.nodeID.description }, "the peer's operations are traced")
        // The sim's own changes are replicated components: every entity it spawned before the
        // cutoff and kept has its operation (logged by the engine, in the commit of its rows).
        let replicatedEntities = Set(try OperationLogReader(path: directory.databasePath).operations(of: engine.nodeID, limit: 1_000_000)
            .filter { $0.kind == ReplicatedOperation.componentKind }
            .compactMap { try? ReplicatedOperation(kind: $0.kind, payload: $0.payload).entity })
        var spawnedAndKept = 0
        let rows = try PersistedComponents.read(directory.databasePath).entities
        let replicatedTypes: Set<String> = ["canvas.shape_style", "canvas.stroke_style", "canvas.document"]
        for (entity, ops) in Dictionary(grouping: trace, by: \.entity) where ops.first?.operation == "spawn" && ops.first!.instant < cutoff {
            guard let id = UUID(uuidString: entity)?.entityID, ops.allSatisfy({ $0.operation != "despawn" }),
                  let components = rows[id], !replicatedTypes.isDisjoint(with: components.keys) else { continue }
            spawnedAndKept += 1
            #expect(replicatedEntities.contains(id), "entity \(entity) spawned before the cutoff has no operation")
        }
        #expect(spawnedAndKept > 0)
        for operation in oldOperations {
            #expect(logged.contains("\(operation.entity):\(operation.revision!)"), "operation \(operation.entity):\(operation.revision!) lost")
        }
        let ownOld = oldOperations.filter { $0.entity == engine.nodeID.description }.compactMap(\.revision).max() ?? 0
        #expect(Int(engine.vectorClock[engine.nodeID] ?? 0) >= ownOld)
        // The vector clock is derived: the engine's is the log's contiguous prefix per node
        // (rebuilt at open), and the one the killed session left in the file never claims
        // more than the log holds.
        for (node, summary) in try OperationLogReader(path: directory.databasePath).summary() {
            let contiguous = summary.gaps.first.map { $0.lowerBound - 1 } ?? summary.highest
            #expect(engine.vectorClock[node] ?? 0 == contiguous, "node \(node)")
            #expect((summary.vectorClock ?? 0) <= contiguous, "node \(node): the file's clock claims \(summary.vectorClock ?? 0)")
        }
        try engine.shutdown()

        // Never a shape without the components it was spawned with; one document.
        let persisted = try PersistedComponents.read(directory.databasePath)
        let orphans = persisted.entities.values.filter { $0["canvas.shape_style"] != nil && $0["canvas.transform"] == nil }
        #expect(persisted.count(CanvasDocument.self) == 1)
        #expect(orphans.isEmpty)

        // The counters persist: the next session sees the crashes and this clean shutdown.
        let after = try DatabaseInspection.inspect(path: directory.databasePath)
        #expect(after.crashCount == sessions)
        #expect(after.cleanShutdownCount == sessions)
        #expect(after.cleanShutdown == true)
    }

    @Test func sigtermShutsDownCleanly() throws {
        let directory = TestDirectory()
        let tracePath = directory.url.appendingPathComponent("critical.trace").path
        let sim = try startSim(directory, ["--entities", "50", "--trace-critical", tracePath])
        #expect(eventually(timeout: .seconds(60)) { TraceLine.read(tracePath).filter { $0.operation == "spawn" }.count > 50 })
        kill(sim.processIdentifier, SIGTERM)
        sim.waitUntilExit()
        #expect(sim.terminationReason == .exit)
        #expect(sim.terminationStatus == 0)
        let inspection = try DatabaseInspection.inspect(path: directory.databasePath)
        #expect(inspection.cleanShutdown == true)
        #expect(inspection.walBytes == 0)
        #expect(inspection.crashCount == 0)
        #expect(inspection.entityCount >= 50)
    }

    @Test func theNextStartSaysTheSimCrashed() throws {
        let directory = TestDirectory()
        let tracePath = directory.url.appendingPathComponent("critical.trace").path
        let sim = try startSim(directory, ["--entities", "20", "--trace-critical", tracePath])
        // Wait until the first critical batch is in the database.
        #expect(eventually(timeout: .seconds(60)) {
            ((try? DatabaseInspection.inspect(path: directory.databasePath))?.entityCount ?? 0) > 0
        })
        kill(sim.processIdentifier, SIGKILL)
        sim.waitUntilExit()

        let next = try ChildProcess.strata(["sim", "--db", directory.databasePath, "--duration", "0.5", "--entities", "20",
                                            "--log-level", "error"])
        let text = next.stdout
        #expect(next.status == 0)
        #expect(text.contains("the previous session crashed"))
        #expect(text.contains("crash #1"))
        #expect(text.contains("integrity check: ok"))
        #expect(text.contains("recovered"))
    }
}

extension UUID {
    var entityID: EntityID { EntityID(self) }
}

/// `strata sim` as a user runs it: Ctrl-Z, and a battery that changes under it.
@Suite(.serialized) struct SimLifecycleTests {
    /// The state letter of /proc/PID/stat (`T` when stopped).
    func processState(_ pid: Int32) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(close, offsetBy: 2)]
    }

    @Test func ctrlZSavesEveryTierThenStops() throws {
        let directory = TestDirectory()
        let tracePath = directory.url.appendingPathComponent("critical.trace").path
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: try strataExecutable())
        sim.arguments = ["sim", "--db", directory.databasePath, "--entities", "50", "--log-level", "error",
                         "--trace-critical", tracePath]
        let out = Pipe()
        sim.standardOutput = out
        sim.standardError = FileHandle.nullDevice
        let output = OutputCollector(out.fileHandleForReading)
        try sim.run()
        defer { if sim.isRunning { kill(sim.processIdentifier, SIGKILL); sim.waitUntilExit() } }
        #expect(eventually { TraceLine.read(tracePath).count > 20 })

        kill(sim.processIdentifier, SIGTSTP)
        #expect(eventually { processState(sim.processIdentifier) == "T" }, "the sim stops itself after saving")
        #expect(eventually(timeout: .seconds(10)) { output.text.contains("suspended (every tier saved)") },
                "the collector reads the pipe on its own thread: wait for the line")
        // Stopped: every entity alive at the suspend is in the database, however recent.
        var alive = Set<String>()
        for line in TraceLine.read(tracePath) {
            if line.operation == "spawn" { alive.insert(line.entity) }
            if line.operation == "despawn" { alive.remove(line.entity) }
        }
        let saved = try DatabaseInspection.inspect(path: directory.databasePath)
        #expect(saved.entityCount == alive.count)
        #expect(saved.cleanShutdown == false, "suspended, not shut down")

        kill(sim.processIdentifier, SIGCONT)
        kill(sim.processIdentifier, SIGTERM)
        sim.waitUntilExit()
        #expect(sim.terminationStatus == 0)
        #expect(try DatabaseInspection.inspect(path: directory.databasePath).cleanShutdown == true)
    }

    @Test func aRunningSimFollowsTheBattery() throws {
        let bus = try PrivateSystemBus()
        try bus.startUPower(onBattery: true)
        try bus.setDisplayDevice(battery: true, state: 2, percentage: 80, level: 1)
        let directory = TestDirectory()
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: try strataExecutable())
        sim.arguments = ["sim", "--db", directory.databasePath, "--entities", "20", "--log-level", "info"]
        sim.environment = bus.environment
        let err = Pipe()
        sim.standardOutput = FileHandle.nullDevice
        sim.standardError = err
        let log = OutputCollector(err.fileHandleForReading)
        try sim.run()
        defer { if sim.isRunning { kill(sim.processIdentifier, SIGKILL); sim.waitUntilExit() } }
        #expect(eventually { log.text.contains("battery 80% discharging [high]: derived interval now 10.0 s") })

        try bus.setDisplayDevice(battery: true, state: 2, percentage: 15, level: 3)
        #expect(eventually { log.text.contains("battery 15% discharging [low]: derived interval now 60.0 s") })

        kill(sim.processIdentifier, SIGTERM)
        sim.waitUntilExit()
        #expect(sim.terminationStatus == 0)
    }
}

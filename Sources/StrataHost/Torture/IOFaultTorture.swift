import Foundation
import Strata
import StrataTesting
import StrataCanvas

/// `strata torture --mode eio|enospc|corrupt`: SQLite's own I/O-error loop. For each
/// method the fault VFS can fail (xWrite, xSync, xTruncate, xRead, xFileSize, xLock,
/// xShmMap), once and from then on, a run fails the Nth call with EIO's error for that
/// method (or SQLITE_FULL), for N = 1, 2, 3, … until a run's workload never reaches call
/// N: every call site the workload reaches is failed once (with `--cycles K`, K call sites
/// spread evenly over the calls a run without a fault makes, so that a short walk reaches
/// the running engine and its shutdown, not only the open). `corrupt` fails reads with
/// SQLITE_CORRUPT, as a damaged page would: the file is replaced while running
/// (`Engine+StoreReplacement.swift`) or set aside at open, and nothing may be lost either.
///
/// A run: a new document opened through the VFS with the fault armed (an open that fails
/// is retried once the fault clears), the canvas for 240 ticks in virtual time with a
/// compaction and a checkpoint, 0.1 s for the writer while the fault holds, then the
/// fault clears and every tier is flushed. The engine must not crash or hang, and nothing
/// may be lost: the world reopened from the file equals the world in memory.
struct IOFaultTorture {
    let setup: TortureSetup
    /// "eio", "enospc" or "corrupt".
    let mode: String
    /// At most this many N per method and persistence, spread over the workload's calls
    /// (nil: every N until the workload ends).
    let maxSites: Int?

    static let ticks = 240

    func code(for method: FaultVFS.Method) -> Int32 {
        switch mode {
        case "enospc": FaultVFS.diskFull
        case "corrupt": FaultVFS.corrupt
        default: FaultVFS.ioError(for: method)
        }
    }

    /// The methods whose calls fail: reads only for `corrupt` (SQLite reads pages; what it
    /// writes it does not check).
    var methods: [FaultVFS.Method] { mode == "corrupt" ? [.read] : FaultVFS.Method.allCases }

    func run(progress: (Int, TortureResult) -> Void) throws -> TortureResult {
        var result = TortureResult(mode: mode, seed: setup.seed)
        let started = MonotonicClock().now()
        let vfs = try FaultVFS.register(name: "strata-torture-io")
        walk: for method in methods {
            // A capped walk takes its call sites evenly from a run without a fault.
            let total = maxSites.map { _ in callsWithoutAFault(vfs, method, &result) }
            for persistent in [false, true] {
                var site = 0
                var lastN = 0
                while true {
                    let n = if let maxSites, let total { max(lastN + 1, 1 + site * total / maxSites) } else { site + 1 }
                    let fired = runOnce(vfs, method, n, persistent, &result)
                    result.cycles += 1
                    progress(result.cycles, result)
                    let key = "\(method) \(persistent ? "persistent" : "once")"
                    if !fired {
                        result.details[key] = site
                        break
                    }
                    result.faults += 1
                    site += 1
                    lastN = n
                    if let maxSites, site >= maxSites {
                        result.details[key] = site
                        break
                    }
                }
            }
        }
        result.seconds = MonotonicClock().now().duration(since: started).seconds
        return result
    }

    /// The calls of `method` a run makes when nothing fails (one cycle of its own).
    private func callsWithoutAFault(_ vfs: FaultVFS, _ method: FaultVFS.Method, _ result: inout TortureResult) -> Int {
        _ = runOnce(vfs, method, Int.max, false, &result)
        result.cycles += 1
        return max(1, vfs.state.calls[method] ?? 1)
    }

    /// One run with call `n` of `method` failing; returns whether the fault fired.
    private func runOnce(_ vfs: FaultVFS, _ method: FaultVFS.Method, _ n: Int, _ persistent: Bool,
                         _ result: inout TortureResult) -> Bool {
        let cycle = result.cycles + 1
        let failuresBefore = result.failureCount
        let site = "\(method) call \(n) \(persistent ? "and after" : "once") (\(mode))"
        setup.removeDocument()
        vfs.reset()
        vfs.arm(method, nth: n, code: code(for: method), persistent: persistent)
        let clock = ManualClock()
        var options = Engine.Options()
        options.vfs = vfs.name
        options.clock = clock

        var engine: Engine?
        do {
            engine = try Engine.open(config: setup.config, components: canvasComponents, logger: setup.logger, options: options)
        } catch {
            vfs.disarm()   // a clear error at open is allowed: the host retries once the fault clears
            do {
                engine = try Engine.open(config: setup.config, components: canvasComponents, logger: setup.logger, options: options)
            } catch {
                result.fail(.reopen, "\(site): the open after the fault cleared failed: \(error)", cycle: cycle)
            }
        }
        guard let engine else { return vfs.state.faults > 0 }

        let scenario = setup.scenario(engine, seed: setup.seed, trace: nil)
        let tick = Duration.nanoseconds(1_000_000_000 / Int64(setup.config.simulation.tickHz))
        for i in 0 ..< Self.ticks {
            scenario.step()
            engine.endTick()
            clock.advance(by: tick)
            if i == Self.ticks / 2 { _ = engine.compactNow(timeout: .milliseconds(100)) }
        }
        engine.flush(reason: .background)   // every tier and a checkpoint, while the fault may still hold
        _ = engine.waitForWriter(timeout: .milliseconds(100))
        vfs.disarm()
        let fired = vfs.state.faults > 0
        // The host goes on ticking: past any backoff of a replacement that failed meanwhile.
        clock.advance(by: setup.config.writer.retryMaxBackoff)
        guard engine.flushNow(timeout: .seconds(20)) else {
            result.fail(.hang, "\(site): the writer did not commit within 20 s of the fault clearing", cycle: cycle)
            engine.abandon()
            return fired
        }
        let expected = WorldSnapshot(engine)
        if engine.metrics.storeReplacements > 0 { result.details["files replaced while running", default: 0] += engine.metrics.storeReplacements }
        do {
            try engine.shutdown()
        } catch {
            result.fail(.changesLost, "\(site): shutdown after the fault cleared failed: \(error)", cycle: cycle)
        }

        do {
            let reopened = try Engine.open(config: setup.config, components: canvasComponents, logger: setup.logger)
            result.checks += 2
            let differences = expected.differences(from: WorldSnapshot(reopened))
            if !differences.isEmpty {
                result.fail(.changesLost, "\(site): \(differences.prefix(3).joined(separator: "; "))", cycle: cycle)
            }
            let problems = try reopened.store.verify()
            if !problems.isEmpty {
                result.fail(.integrity, "\(site): \(problems.prefix(3).joined(separator: "; "))", cycle: cycle)
            }
            try reopened.shutdown()
        } catch {
            result.fail(.reopen, "\(site): \(error)", cycle: cycle)
        }
        if result.failureCount > failuresBefore && result.keptFiles.count < 5 {
            result.keptFiles.append(setup.keepFiles(in: setup.directory.appendingPathComponent("failed-\(mode)-\(cycle)").path))
        }
        return fired
    }
}

/// Every persisted component of a world, encoded, by entity; and the operation log's clock.
struct WorldSnapshot: Equatable {
    var entities: [EntityID: [String: [UInt8]]] = [:]
    var vectorClock: [NodeID: Int64] = [:]

    init(_ engine: Engine) {
        let world = engine.world
        for entity in world.entities { if let id = world.id(of: entity) { entities[id] = [:] } }
        for type in world.componentTypes where type.tier != .ephemeral { add(type, world) }
        vectorClock = engine.vectorClock
    }

    private mutating func add<C: Component>(_ type: C.Type, _ world: World) {
        world.forEach(C.self) { entity, value in
            var payload = PayloadWriter()
            value.encode(to: &payload)
            if let id = world.id(of: entity) { entities[id, default: [:]][C.typeName] = payload.bytes }
        }
    }

    /// What `other` lacks or has differently, in words.
    func differences(from other: WorldSnapshot) -> [String] {
        var found: [String] = []
        for (id, components) in entities.sorted(by: { $0.key.description < $1.key.description }) {
            guard let theirs = other.entities[id] else {
                found.append("entity \(id) missing")
                continue
            }
            for (name, bytes) in components.sorted(by: { $0.key < $1.key }) where theirs[name] != bytes {
                found.append(theirs[name] == nil ? "\(name) of \(id) missing" : "\(name) of \(id) differs")
            }
        }
        for id in other.entities.keys where entities[id] == nil { found.append("entity \(id) should be gone") }
        if vectorClock != other.vectorClock { found.append("vector clock \(other.vectorClock), expected \(vectorClock)") }
        return found
    }
}

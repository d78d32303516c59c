import ArgumentParser
import Foundation
import Logging
import Strata
import StrataPostgres

/// A replicated component of the benchmark: a position, derived (it moves every tick).
struct BenchPosition: Component {
    static let typeName = "bench.position"
    static let tier = Tier.derived
    static let replication = Replication.lastWriterWins
    var x: Float, y: Float

    func encode(to p: inout PayloadWriter) { p.write(x); p.write(y) }
    init(x: Float, y: Float) { self.x = x; self.y = y }
    init(from p: inout PayloadReader, version: Int) throws { x = try p.read(); y = try p.read() }
}

/// A replicated component of the benchmark: a label, critical (set by a user's action).
struct BenchLabel: Component {
    static let typeName = "bench.label"
    static let tier = Tier.critical
    static let replication = Replication.lastWriterWins
    var serial: Int

    func encode(to p: inout PayloadWriter) { p.write(serial) }
    init(serial: Int) { self.serial = serial }
    init(from p: inout PayloadReader, version: Int) throws { serial = try p.read() }
}

/// Replicated components through the server: how long a change takes to reach another
/// device, and what applying a large pull costs the tick thread.
extension SyncBenchCommand {
    static let replicatedTypes: [any Component.Type] = [BenchPosition.self, BenchLabel.self]

    /// Two devices at 60 Hz; every 100 ms one changes a replicated value: a position
    /// (derived: logged within `replicate_interval_ms`, riding the critical flush), or a
    /// label (critical: committed at once with `flushNow`, as the hand-written operations
    /// of ``measureLatency(listen:)`` are). Returns the p50 and p99, in ms, of change (or
    /// commit) → applied on the other device.
    func measureReplicatedLatency(critical: Bool) throws -> (p50: Double, p99: Double) {
        let folder = try scratchFolder("replicated-\(critical)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let document = "replicated-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let a = try device("a", document: document, in: folder, types: Self.replicatedTypes)
        let b = try device("b", document: document, in: folder, types: Self.replicatedTypes)
        defer { try? a.shutdown(); try? b.shutdown() }
        nonisolated(unsafe) var appliedAt: [Int: ContinuousClock.Instant] = [:]
        let shape = a.world.spawn(BenchPosition(x: 0, y: 0), BenchLabel(serial: 0))
        guard let id = a.world.id(of: shape) else { throw ValidationError("the shape just spawned has no id") }
        b.onReplicatedChange = { change in
            guard change.kind == .set, let entity = b.world.entity(for: change.entity) else { return }
            if critical, change.typeName == BenchLabel.typeName, let label = b.world.get(BenchLabel.self, for: entity) {
                appliedAt[label.serial] = .now
            } else if !critical, change.typeName == BenchPosition.typeName, let position = b.world.get(BenchPosition.self, for: entity) {
                appliedAt[Int(position.x)] = .now
            }
        }
        a.startSync(transport: try PostgresTransport(url: server, document: document)) { _ in }
        b.startSync(transport: try PostgresTransport(url: server, document: document)) { _ in }
        let ready = ContinuousClock.now
        while b.world.entity(for: id) == nil || b.sync?.listening != true {
            guard ContinuousClock.now - ready < .seconds(30) else { throw ValidationError("the devices did not connect in 30 s") }
            a.endTick(); b.endTick()
            Thread.sleep(forTimeInterval: Self.tick)
        }
        var changedAt: [Int: ContinuousClock.Instant] = [:]
        var nextChange = ContinuousClock.now
        var serial = 0
        let deadline = ContinuousClock.now + .seconds(Double(latencyOperations) * 0.1 + 60)
        while appliedAt[latencyOperations] == nil {   // the last change (earlier moves may be coalesced away)
            guard ContinuousClock.now < deadline else { throw ValidationError("replicated changes were not applied in time") }
            if serial < latencyOperations && ContinuousClock.now >= nextChange {
                serial += 1
                if critical {
                    a.world.insert(BenchLabel(serial: serial), for: shape)
                    a.endTick()
                    guard a.flushNow(timeout: .seconds(10)) else { throw ValidationError("a commit failed") }
                } else {
                    a.world.insert(BenchPosition(x: Float(serial), y: 0), for: shape)
                }
                changedAt[serial] = .now
                nextChange = .now + .milliseconds(100)
            }
            a.endTick()
            b.endTick()
            Thread.sleep(forTimeInterval: Self.tick)
        }
        // A move overwritten before it was logged is never applied (coalesced): the next one's time counts.
        var latencies: [Double] = []
        for (serial, at) in changedAt {
            if let applied = (serial ... latencyOperations).lazy.compactMap({ appliedAt[$0] }).first {
                latencies.append((applied - at).milliseconds)
            }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)] }
        return (percentile(0.5), percentile(0.99))
    }

    /// One device logs `--replicated-operations` replicated values (one entity each) and
    /// pushes them; a new device joins, ticking at 60 Hz. Returns the joining tick
    /// thread's CPU time in `endTick` (its own: the writer, the sync thread and the server
    /// share this machine's cores) until every value is applied and flushed, its
    /// slowest end of tick that applied (it applies what it pulls there), and its
    /// slowest end of tick that flushed (the drain of what was applied).
    func measureReplicatedApply() throws -> (totalMs: Double, slowestTickMs: Double, slowestFlushTickMs: Double, ticks: Int) {
        let folder = try scratchFolder("replicated-apply")
        defer { try? FileManager.default.removeItem(at: folder) }
        let document = "replicated-apply-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let author = try device("author", document: document, in: folder, types: Self.replicatedTypes)
        for i in 0 ..< replicatedOperations { author.world.spawn(BenchPosition(x: Float(i), y: 1)) }
        guard author.flushNow(timeout: .seconds(120)) else { throw ValidationError("the values did not commit") }
        try pushEverything(author, document: document, operations: replicatedOperations)

        let joiner = try device("joiner", document: document, in: folder, types: Self.replicatedTypes)
        defer { try? joiner.shutdown() }
        joiner.startSync(transport: try PostgresTransport(url: server, document: document)) { _ in }
        var total = Duration.zero, slowest = Duration.zero, slowestFlush = Duration.zero, ticks = 0
        let start = ContinuousClock.now
        while joiner.world.count(of: BenchPosition.self) < replicatedOperations || joiner.world.pendingCount(.critical) > 0 {
            let flushes = joiner.metrics.flushCount
            let tick = Self.threadCPUTime()
            joiner.endTick()
            let spent = Self.threadCPUTime() - tick
            if joiner.world.count(of: BenchPosition.self) > 0 {
                total += spent
                ticks += 1
                if joiner.metrics.flushCount != flushes { slowestFlush = max(slowestFlush, spent) } else { slowest = max(slowest, spent) }
            }
            guard ContinuousClock.now - start < .seconds(300) else { throw ValidationError("the join did not finish in 300 s") }
            Thread.sleep(forTimeInterval: Self.tick)
        }
        return (total.milliseconds, slowest.milliseconds, slowestFlush.milliseconds, ticks)
    }

    /// The calling thread's CPU time.
    static func threadCPUTime() -> Duration {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return .seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
    }
}

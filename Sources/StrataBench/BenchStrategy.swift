import Foundation
import Strata

/// One tick of the benchmark workload: the entities that move, and the critical change
/// (a label edit) made once a simulated second.
package struct BenchTick {
    package var index: Int
    package var time: Instant
    /// How many entities move every tick: entities `0, stride, 2·stride, …`, spread
    /// over the world as a game's moving things are (not the first ones spawned, whose
    /// rows would sit together on a few pages).
    package var moving: Int
    package var stride: Int
    /// The entity whose label changes this tick, if any.
    package var criticalEntity: Int?

    /// The entity index of mover `i`.
    @inline(__always)
    package func mover(_ i: Int) -> Int { i * stride }

    /// Where mover `i` is after this tick (deterministic, so every strategy writes the same bytes):
    /// half a unit further along x each tick, or, with ``smooth``, round a circle of radius
    /// 100 (a quarter turn in 10 s), through floats of every bit pattern.
    @inline(__always)
    package func position(_ i: Int) -> (Float, Float) {
        guard Self.smooth else { return (Float(index + 1) * 0.5, Float(i)) }
        let angle = Double(index + 1) / 60 * (Double.pi / 20) + Double(i)
        return (Float(100 * cos(angle)), Float(100 * sin(angle)) + Float(i))
    }

    /// Movers go round circles (`strata bench --motion smooth`). Set once, before a run.
    nonisolated(unsafe) static var smooth = false
}

/// A way to persist the workload: Strata, or what a user would do instead.
///
/// Owned by the runner's thread; background threads of its own log into `log`.
package protocol BenchStrategy: AnyObject {
    /// Short, stable name (`naive`, `tick-full`, `strata-low`…).
    var name: String { get }
    /// One line for the report.
    var summary: String { get }
    /// The counting VFS its SQLite files go through (nil: it counts for itself).
    var vfs: CountingVFS? { get }
    var log: DurabilityLog { get }

    /// Creates and saves the initial world of `entities` (not measured).
    func prepare(entities: Int, directory: URL) throws
    /// Applies one tick's changes and persists them as the strategy does.
    func tick(_ tick: BenchTick) throws
    /// The measured run is over: counters are read after this returns, before `close`.
    func finish() throws
    /// Releases files and threads (not measured).
    func close() throws

    /// Rows (or records) written during the measured run.
    var rowsWritten: Int { get }
    /// Encoded payload bytes of those rows: what was persisted, before any storage overhead.
    var persistedPayloadBytes: Int { get }
    /// Compaction rounds and steps during the run (Strata).
    var compactions: (rounds: Int, steps: Int)? { get }
    /// After `close`: reopens what was persisted and rebuilds the world; the time it took.
    func reload() throws -> Duration?
    /// CPU time of background threads (writer, snapshot writer) during the run.
    var backgroundCPU: Duration { get }
    /// The size of the file the setup produced (its first save), for a strategy that keeps one.
    var fileBytes: Int? { get }
    /// Disk counters for strategies that do not go through SQLite: (sync requests, writes, bytes).
    var ownDiskCounts: (syncs: Int, writes: Int, bytes: Int)? { get }
    /// Strata with a history window (`--history-secs`): the bytes it keeps per second of window,
    /// read at the end of the run.
    var historyBytesPerSecond: Double? { get }
}

extension BenchStrategy {
    package var vfs: CountingVFS? { nil }
    package var persistedPayloadBytes: Int { 0 }
    package var compactions: (rounds: Int, steps: Int)? { nil }
    package func reload() throws -> Duration? { nil }
    package var backgroundCPU: Duration { .zero }
    package var fileBytes: Int? { nil }
    package var ownDiskCounts: (syncs: Int, writes: Int, bytes: Int)? { nil }
    package var historyBytesPerSecond: Double? { nil }
}

/// The workload's components for the Strata strategies.
struct BenchTransform: Component {
    static let typeName = "bench.transform"
    static let tier = Tier.derived
    var x: Float, y: Float, rotation: Float, scale: Float
    init(x: Float, y: Float) { self.x = x; self.y = y; rotation = 0; scale = 1 }
    /// With a declared precision (`strata bench --precision`), its floats are stored to it
    /// (``PayloadWriter/write(_:precision:)``). Set once, before a run opens an engine.
    nonisolated(unsafe) static var precision: Float?

    func encode(to p: inout PayloadWriter) {
        if let precision = Self.precision {
            p.write(x, precision: precision); p.write(y, precision: precision)
            p.write(rotation, precision: precision); p.write(scale, precision: precision)
        } else {
            p.write(x); p.write(y); p.write(rotation); p.write(scale)
        }
    }

    init(from p: inout PayloadReader, version: Int) throws {
        if let precision = Self.precision {
            x = try p.read(precision: precision); y = try p.read(precision: precision)
            rotation = try p.read(precision: precision); scale = try p.read(precision: precision)
        } else {
            x = try p.read(); y = try p.read(); rotation = try p.read(); scale = try p.read()
        }
    }
}

extension BenchRunner {
    /// The transforms of the runs that follow store their floats to `precision` (nil: whole),
    /// and move round circles if `smooth` (else along x by half a unit a tick).
    package static func storeTransforms(precision: Float?, smooth: Bool = false) {
        BenchTransform.precision = precision
        BenchTick.smooth = smooth
    }
}

struct BenchLabel: Component {
    static let typeName = "bench.label"
    static let tier = Tier.critical
    var text: String
    var revision: Int
    init(text: String, revision: Int) { self.text = text; self.revision = revision }
    func encode(to p: inout PayloadWriter) { p.write(text); p.write(revision) }
    init(from p: inout PayloadReader, version: Int) throws { text = try p.read(); revision = try p.read() }
}

/// Encoded sizes, so every strategy writes the same payload bytes.
enum BenchPayload {
    static func transform(_ x: Float, _ y: Float) -> [UInt8] {
        var w = PayloadWriter(capacity: 16)
        BenchTransform(x: x, y: y).encode(to: &w)
        return w.bytes
    }

    static func label(entity: Int, revision: Int) -> [UInt8] {
        var w = PayloadWriter(capacity: 32)
        BenchLabel(text: "entity \(entity)", revision: revision).encode(to: &w)
        return w.bytes
    }
}

/// Applies a tick to a Strata world (the baseline's and Strata's shared work), logging
/// the changes.
func apply(_ tick: BenchTick, to world: World, entities: [Entity], log: DurabilityLog) {
    for i in 0 ..< tick.moving {
        let (x, y) = tick.position(i)
        world.mutate(BenchTransform.self, of: entities[tick.mover(i)]) { $0.x = x; $0.y = y }
    }
    if tick.moving > 0 { log.changed(.derived, at: tick.time) }
    if let c = tick.criticalEntity {
        world.mutate(BenchLabel.self, of: entities[c]) { $0.revision = tick.index + 1 }
        log.changed(.critical, at: tick.time)
    }
}

/// The calling thread's CPU time.
func threadCPUTime() -> Duration {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return .seconds(ts.tv_sec) + .nanoseconds(ts.tv_nsec)
}

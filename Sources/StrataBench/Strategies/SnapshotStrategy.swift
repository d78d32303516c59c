import Foundation
import Strata

/// What game save plugins do, done right: every K seconds the whole world is serialized
/// on the tick thread, then a background thread writes it to a temporary file, fsyncs
/// it, renames it over the previous save and fsyncs the directory.
final class SnapshotStrategy: BenchStrategy, @unchecked Sendable {
    // @unchecked Sendable: the counters shared with the writer thread are under `lock`;
    // the world arrays are touched only by the tick thread.
    let log = DurabilityLog()
    let every: Duration
    private var transforms: [(Float, Float)] = []
    private var revisions: [Int] = []
    private var directory = URL(fileURLWithPath: "/tmp")
    private var lastSnapshot: Instant?
    private let lock = NSLock()
    private var inFlight = false
    private var skipped = 0
    private var syncs = 0, writes = 0, bytes = 0, records = 0
    private var writerCPU: Duration = .zero
    private let queue = DispatchQueue(label: "strata.bench.snapshot")

    let name: String

    init(name: String = "snapshot", every: Duration) {
        self.name = name
        self.every = every
    }
    var summary: String {
        "whole world to a file every \(Int(every.seconds)) s: temp file, fsync, rename, directory fsync (off the tick thread)"
    }

    var rowsWritten: Int { lock.withLock { records } }
    /// The whole world, every snapshot: its bytes are all payload.
    var persistedPayloadBytes: Int { lock.withLock { bytes } }
    var backgroundCPU: Duration { lock.withLock { writerCPU } }
    var ownDiskCounts: (syncs: Int, writes: Int, bytes: Int)? { lock.withLock { (syncs, writes, bytes) } }

    func prepare(entities: Int, directory: URL) throws {
        self.directory = directory
        transforms = (0 ..< entities).map { (0, Float($0)) }
        revisions = Array(repeating: 0, count: entities)
    }

    func tick(_ tick: BenchTick) throws {
        for i in 0 ..< tick.moving { transforms[tick.mover(i)] = tick.position(i) }
        if tick.moving > 0 { log.changed(.derived, at: tick.time) }
        if let c = tick.criticalEntity {
            revisions[c] = tick.index + 1
            log.changed(.critical, at: tick.time)
        }
        if lastSnapshot.map({ tick.time >= $0 + every }) ?? true {
            lastSnapshot = tick.time
            if lock.withLock({ inFlight }) {
                lock.withLock { skipped += 1 }   // the previous save is still being written
                return
            }
            var data = PayloadWriter(capacity: transforms.count * 24)
            for i in transforms.indices {
                data.write(UInt32(i))
                data.write(transforms[i].0)
                data.write(transforms[i].1)
                data.write(revisions[i])
            }
            let bytes = data.bytes, takenAt = tick.time, count = transforms.count
            lock.withLock { inFlight = true }
            queue.async { self.write(bytes, takenAt: takenAt, records: count) }
        }
    }

    private func write(_ bytes: [UInt8], takenAt: Instant, records count: Int) {
        let cpuStart = threadCPUTime()
        let written = SnapshotFile.save(bytes, as: "world.save", in: directory)
        let done = MonotonicClock().now()
        for tier in Tier.persisted { log.durable(tier, at: done, covers: takenAt) }
        let cpu = threadCPUTime() - cpuStart
        lock.withLock {
            syncs += 2
            writes += 1
            self.bytes += written
            records += count
            writerCPU += cpu
            inFlight = false
        }
    }

    func finish() throws { queue.sync {} }
    func close() throws {}

    /// Reads the last snapshot back into arrays, as a game's load would.
    func reload() throws -> Duration? {
        let clock = MonotonicClock()
        let start = clock.now()
        let data = try Data(contentsOf: directory.appendingPathComponent("world.save"))
        var loaded: [(Float, Float)] = []
        var labels: [Int] = []
        loaded.reserveCapacity(transforms.count)
        labels.reserveCapacity(transforms.count)
        try data.withUnsafeBytes { bytes in
            var reader = PayloadReader(bytes)
            while !reader.isAtEnd {
                _ = try reader.read() as UInt32
                loaded.append((try reader.read(), try reader.read()))
                labels.append(try reader.read())
            }
        }
        let elapsed = clock.now().duration(since: start)
        precondition(loaded.count == transforms.count, "the snapshot holds \(loaded.count) entities, not \(transforms.count)")
        return elapsed
    }
}

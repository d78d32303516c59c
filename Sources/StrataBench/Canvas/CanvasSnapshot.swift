import Foundation
import Strata
import StrataCanvas

/// The canvas saved whole, as game save plugins save (FirebladeECS encodes its whole
/// world through Codable): every K seconds every persisted component of every entity is
/// encoded on the tick thread (its entity's 16-byte id, the type, the payload's length
/// and the payload), then a background thread writes it to a temporary file, syncs it,
/// renames it over the previous save and syncs the folder.
///
/// It watches the world Strata persists in the same run, so both save the same changes.
/// Only the components: no operation log, no jobs (which Strata writes too).
///
/// Tick thread (`tick`); its writer is a queue of its own.
final class CanvasSnapshot: @unchecked Sendable {
    // @unchecked Sendable: the counters shared with the writer queue are under `lock`;
    // the rest is touched only by the tick thread.
    let name: String
    let every: Duration
    let log = DurabilityLog()
    private let directory: URL
    private let types: [any Component.Type]
    private var lastSnapshot: Instant?
    private var encoder = PayloadWriter(capacity: 1 << 16)
    private var scratch = PayloadWriter(capacity: 256)
    private let lock = NSLock()
    private var inFlight = false
    private(set) var skipped = 0
    private var syncs = 0, writes = 0, bytes = 0, records = 0
    private var writerCPU: Duration = .zero
    private let queue = DispatchQueue(label: "strata.bench.canvas-snapshot")

    init(every: Duration, directory: URL, types: [any Component.Type]) {
        self.name = "snapshot-\(Int(every.seconds))s"
        self.every = every
        self.directory = directory
        self.types = types.filter { $0.tier != .ephemeral }
    }

    var summary: String {
        "the canvas's components encoded whole every \(Int(every.seconds)) s: temp file, fsync, rename, directory fsync (off the tick thread)"
    }

    /// (sync requests, write calls, bytes, records) so far.
    var counts: (syncs: Int, writes: Int, bytes: Int, records: Int) { lock.withLock { (syncs, writes, bytes, records) } }
    var backgroundCPU: Duration { lock.withLock { writerCPU } }

    /// Takes a snapshot of `world` if one is due; the tick's own cost is the encoding.
    func tick(_ world: World, now: Instant) {
        guard lastSnapshot.map({ now >= $0 + every }) ?? true else { return }
        lastSnapshot = now
        if lock.withLock({ inFlight }) {
            skipped += 1   // the previous save is still being written
            return
        }
        encoder.reset()
        var count = 0
        for (index, type) in types.enumerated() {
            count += encode(type, index: UInt8(index), world)
        }
        let (data, records) = (encoder.bytes, count)
        lock.withLock { inFlight = true }
        queue.async { self.write(data, takenAt: now, records: records) }
    }

    private func encode<C: Component>(_ type: C.Type, index: UInt8, _ world: World) -> Int {
        var count = 0
        world.forEach(C.self) { entity, value in
            guard let id = world.id(of: entity) else { return }
            scratch.reset()
            value.encode(to: &scratch)
            encoder.write(id)
            encoder.write(index)
            encoder.write(scratch.bytes)
            count += 1
        }
        return count
    }

    private func write(_ data: [UInt8], takenAt: Instant, records count: Int) {
        let cpuStart = threadCPUTime()
        let written = SnapshotFile.save(data, as: "canvas.save", in: directory)
        let done = MonotonicClock().now()
        for tier in Tier.persisted { log.durable(tier, at: done, covers: takenAt) }
        let cpu = threadCPUTime() - cpuStart
        lock.withLock {
            syncs += 2
            writes += 1
            bytes += written
            records += count
            writerCPU += cpu
            inFlight = false
        }
    }

    /// Waits for the save in flight.
    func finish() { queue.sync {} }

    /// Reads the last save back (every record decoded to its raw parts), as a game's load would.
    func reload() throws -> Duration {
        let clock = MonotonicClock()
        let start = clock.now()
        let data = try Data(contentsOf: directory.appendingPathComponent("canvas.save"))
        try data.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            while !reader.isAtEnd {
                _ = try reader.read() as EntityID
                _ = try reader.read() as UInt8
                _ = try reader.read() as [UInt8]
            }
        }
        return clock.now().duration(since: start)
    }
}

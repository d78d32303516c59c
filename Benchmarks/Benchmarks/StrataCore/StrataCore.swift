// Micro-costs of the engine's data path, each measured against what it must beat.
//
//     cd Benchmarks && swift package benchmark
//
// Every benchmark uses the public API only, in a release build, on real files.

import Benchmark
import Foundation
import GRDBSQLite
import Logging
import Strata

// MARK: Components

struct Transform: Component {
    static let typeName = "bench.transform"
    static let tier = Tier.derived
    var x: Float, y: Float, rotation: Float, scale: Float
    func encode(to p: inout PayloadWriter) { p.write(x); p.write(y); p.write(rotation); p.write(scale) }
    init(x: Float, y: Float, rotation: Float = 0, scale: Float = 1) { self.x = x; self.y = y; self.rotation = rotation; self.scale = scale }
    init(from p: inout PayloadReader, version: Int) throws {
        x = try p.read(); y = try p.read(); rotation = try p.read(); scale = try p.read()
    }
}

struct Style: Component {
    static let typeName = "bench.style"
    static let tier = Tier.critical
    var color: UInt32, kind: UInt8
    func encode(to p: inout PayloadWriter) { p.write(color); p.write(kind) }
    init(color: UInt32, kind: UInt8) { self.color = color; self.kind = kind }
    init(from p: inout PayloadReader, version: Int) throws { color = try p.read(); kind = try p.read() }
}

/// `Transform` with the default `Codable` payload instead of a hand-written one (same 16 bytes).
struct CodableTransform: Component, Codable {
    static let typeName = "bench.codable_transform"
    static let tier = Tier.derived
    var x: Float, y: Float, rotation: Float, scale: Float
}

/// A richer component, hand-written: a name, a level, an optional title, a dictionary.
struct Inventory: Component {
    static let typeName = "bench.inventory"
    static let tier = Tier.critical
    var owner: String, level: Int, title: String?, items: [String: Int]
    init(owner: String, level: Int, title: String?, items: [String: Int]) {
        self.owner = owner; self.level = level; self.title = title; self.items = items
    }
    func encode(to p: inout PayloadWriter) {
        p.write(owner); p.write(level)
        p.write(title != nil); if let title { p.write(title) }
        p.write(items.count); for (key, value) in items { p.write(key); p.write(value) }
    }
    init(from p: inout PayloadReader, version: Int) throws {
        owner = try p.read(); level = try p.read()
        title = try p.read() as Bool ? try p.read() as String : nil
        let count: Int = try p.read()
        items = [:]
        for _ in 0 ..< count { items[try p.read() as String] = try p.read() as Int }
    }
}

/// The same, `Codable`: no payload code.
struct CodableInventory: Component, Codable {
    static let typeName = "bench.codable_inventory"
    static let tier = Tier.critical
    var owner: String, level: Int, title: String?, items: [String: Int]
}

/// Encodes `value` `count` times into one reused buffer, then decodes it `count` times.
func roundTrips<C: Component>(_ value: C, _ benchmark: Benchmark, encode: Bool) {
    var writer = PayloadWriter()
    if !encode { value.encode(to: &writer) }
    let bytes = writer.bytes
    for _ in benchmark.scaledIterations {
        if encode {
            writer.reset()
            value.encode(to: &writer)
            blackHole(writer.bytes.count)
        } else {
            bytes.withUnsafeBytes { buffer in
                var reader = PayloadReader(buffer)
                blackHole(try! C(from: &reader, version: 1))
            }
        }
    }
}

// MARK: Fixtures

let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(getpid())")

/// Removes the scratch folder when the process ends (the reload files run to hundreds of MB).
func removeScratch() { try? FileManager.default.removeItem(at: scratch) }
let quiet = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

func freshPath(_ name: String) -> String {
    try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    let path = scratch.appendingPathComponent(name).path
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    return path
}

func benchConfig(_ path: String) -> StrataConfig {
    var config = StrataConfig()
    config.database.path = path
    // Checkpoints are not what these benchmarks measure: keep them out of the way.
    config.persistence.maxWalSizeBytes = 1024 * 1024 * 1024
    config.persistence.desktop.maxWalSizeBytes = 1024 * 1024 * 1024
    config.persistence.checkpointInterval = .seconds(3600)
    return config
}

/// An engine with `count` entities, each with a Transform and a Style, all saved
/// (and folded into the base rows, when `compacted`).
func makeEngine(_ name: String, count: Int, compacted: Bool = false, config: StrataConfig? = nil) throws -> (Engine, [Entity]) {
    let engine = try Engine.open(config: config ?? benchConfig(freshPath(name)), components: [Transform.self, Style.self], logger: quiet)
    let entities = (0 ..< count).map { i in
        engine.world.spawn(Transform(x: Float(i), y: 0), Style(color: UInt32(i), kind: 1))
    }
    if compacted { engine.compactNow(timeout: .seconds(600)) } else { engine.flushNow() }
    return (engine, entities)
}

/// A file of 100k entities × 2 components folded into base rows, then every Transform
/// rewritten round after round until the segment log holds `backlogBytes` (compaction
/// waits: its caps are above that, and no end of tick ever tells it the power).
func makeBacklog(_ name: String, backlogBytes: Int) throws {
    var config = benchConfig(freshPath(name))
    config.compaction.backlogBytes = 2 * backlogBytes
    config.compaction.maxBacklogBytes = 2 * backlogBytes
    let (engine, entities) = try makeEngine(name, count: 100_000, compacted: true, config: config)
    var round: Float = 0
    while engine.metrics.segmentBacklogBytes < backlogBytes {
        round += 1
        for e in entities { engine.world.mutate(Transform.self, of: e) { $0.y = round } }
        engine.flushNow(reason: .majorAction)
    }
    try engine.shutdown()
}

/// Opens `name` and checks the world came back whole.
func reload(_ name: String, expecting count: Int) throws {
    let reopened = try Engine.open(config: benchConfig(scratch.appendingPathComponent(name).path),
                                   components: [Transform.self, Style.self], logger: quiet)
    precondition(reopened.world.entityCount == count)
    try reopened.shutdown()
}


/// A document whose log holds `perNode` operations from each of `nodes` peers, written
/// through the engine (received in batches of 10k).
func makeOperationLog(_ name: String, nodes: Int, perNode: Int) throws {
    let engine = try Engine.open(config: benchConfig(freshPath(name)), logger: quiet)
    for _ in 0 ..< nodes {
        let node = NodeID()
        for seq in 1 ... perNode {
            engine.receiveOperation(LoggedOperation(node: node, seq: Int64(seq), timestamp: HybridTimestamp(milliseconds: Int64(seq)),
                                                    kind: "peer.edit", payload: [UInt8(truncatingIfNeeded: seq)]))
            if seq % 10_000 == 0 { engine.flushNow(reason: .explicitSave) }
        }
    }
    try engine.shutdown()
}

// MARK: The raw baseline

/// The same upsert as Strata's writer, on the same schema, with a plain C loop.
final class RawUpsertLoop {
    let db: OpaquePointer
    let statement: OpaquePointer
    let ids: [[UInt8]]
    let payloads: [[UInt8]]

    init(path: String, rows: Int) {
        var handle: OpaquePointer?
        sqlite3_open(path, &handle)
        db = handle!
        sqlite3_exec(db, """
            PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
            PRAGMA wal_autocheckpoint = 0; PRAGMA foreign_keys = ON;
            CREATE TABLE entities (id BLOB PRIMARY KEY NOT NULL CHECK (length(id) = 16), created_at INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE components (
                entity_id BLOB NOT NULL REFERENCES entities(id) ON DELETE CASCADE, type_id INTEGER NOT NULL,
                version INTEGER NOT NULL, payload BLOB NOT NULL, updated_at INTEGER NOT NULL,
                PRIMARY KEY (entity_id, type_id)) WITHOUT ROWID;
            """, nil, nil, nil)
        ids = (0 ..< rows).map { _ in withUnsafeBytes(of: UUID().uuid) { Array($0) } }
        payloads = (0 ..< rows).map { i in
            var w = PayloadWriter()
            Transform(x: Float(i), y: 1).encode(to: &w)
            return w.bytes
        }
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        var insert: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO entities VALUES (?, 0)", -1, &insert, nil)
        for id in ids {
            id.withUnsafeBytes { _ = sqlite3_bind_blob(insert, 1, $0.baseAddress, 16, nil) }
            sqlite3_step(insert); sqlite3_reset(insert)
        }
        sqlite3_finalize(insert)
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        var upsert: OpaquePointer?
        sqlite3_prepare_v3(db, """
            INSERT INTO components (entity_id, type_id, version, payload, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (entity_id, type_id) DO UPDATE SET
                version = excluded.version, payload = excluded.payload, updated_at = excluded.updated_at
            """, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &upsert, nil)
        statement = upsert!
    }

    /// One transaction of `ids.count` upserts, payloads already encoded (a stricter
    /// baseline than Strata's writer, which encodes as it goes).
    func run(round: Int64) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        for i in ids.indices {
            ids[i].withUnsafeBytes { id in
                payloads[i].withUnsafeBytes { payload in
                    sqlite3_bind_blob(statement, 1, id.baseAddress, 16, nil)
                    sqlite3_bind_int64(statement, 2, 1)
                    sqlite3_bind_int64(statement, 3, 1)
                    sqlite3_bind_blob(statement, 4, payload.baseAddress, Int32(payload.count), nil)
                    sqlite3_bind_int64(statement, 5, round)
                    sqlite3_step(statement)
                    sqlite3_reset(statement)
                }
            }
        }
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
    }
}

/// A replicated component: a position, as another device sends it.
struct Position: Component {
    static let typeName = "bench.position"
    static let tier = Tier.derived
    static let replication = Replication.lastWriterWins
    var x: Float, y: Float
    func encode(to p: inout PayloadWriter) { p.write(x); p.write(y) }
    init(x: Float, y: Float) { self.x = x; self.y = y }
    init(from p: inout PayloadReader, version: Int) throws { x = try p.read(); y = try p.read() }
}

/// `count` operations of another node, each setting the position of a new entity, in
/// the wire format of `strata.component` (docs/sync.md): format 1, the entity's id, the
/// type's name, the payload version, a presence flag, the value's length and bytes.
func replicatedOperations(_ count: Int) -> [LoggedOperation] {
    let node = NodeID()
    let start = Int64(Date().timeIntervalSince1970 * 1000)
    return (0 ..< count).map { i in
        var value = PayloadWriter()
        Position(x: Float(i), y: 1).encode(to: &value)
        var payload = PayloadWriter()
        payload.write(UInt8(1))
        payload.write(EntityID())
        payload.write(Position.typeName)
        payload.write(Position.payloadVersion)
        payload.write(true)
        payload.write(value.bytes)
        return LoggedOperation(node: node, seq: Int64(i + 1), timestamp: HybridTimestamp(milliseconds: start, counter: Int64(i % 60_000)),
                               kind: "strata.component", payload: payload.bytes)
    }
}

// MARK: Benchmarks

let writerCommitMicros = BenchmarkMetric.custom("Writer commit (µs)", polarity: .prefersSmaller, useScalingFactor: false)
/// From the engine's counting VFS: what SQLite asked of the disk for the batch.
let syncRequests = BenchmarkMetric.custom("Sync requests", polarity: .prefersSmaller, useScalingFactor: false)
let bytesWritten = BenchmarkMetric.custom("Bytes written", polarity: .prefersSmaller, useScalingFactor: false)

let keys = 10_000

func microseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    return Int(seconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000)
}

let benchmarks: @Sendable () -> Void = {
    atexit { removeScratch() }
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        warmupIterations: 3,
        maxDuration: .seconds(4),
        maxIterations: 1000)

    var engine: Engine!
    var entities: [Entity] = []

    // Per change: `mutate` of a key that is not dirty yet (sets the bit, queues the key).
    Benchmark("Dirty marking, first change of a key",
              configuration: .init(scalingFactor: .kilo),
              closure: { benchmark in
                  // As a host's system would: the world and the handles in locals.
                  let world = engine.world, handles = entities, count = benchmark.scaledIterations.count
                  benchmark.startMeasurement()
                  for i in 0 ..< count {
                      world.mutate(Transform.self, of: handles[i]) { $0.x += 1 }
                  }
                  benchmark.stopMeasurement()
                  engine.flushNow(reason: .majorAction)
              },
              setup: { (engine, entities) = try! makeEngine("marking.db", count: 1000) },
              teardown: { try! engine.shutdown() })

    // Per change: `mutate` of a key that is already dirty (a drag: 60 changes a second).
    Benchmark("Dirty marking, repeated change of a dirty key",
              configuration: .init(scalingFactor: .kilo),
              closure: { benchmark in
                  let world = engine.world, handles = entities, count = benchmark.scaledIterations.count
                  for i in 0 ..< count { world.mutate(Transform.self, of: handles[i]) { $0.x += 1 } }
                  benchmark.startMeasurement()
                  for i in 0 ..< count {
                      world.mutate(Transform.self, of: handles[i]) { $0.x += 1 }
                  }
                  benchmark.stopMeasurement()
                  engine.flushNow(reason: .majorAction)
              },
              setup: { (engine, entities) = try! makeEngine("marking-repeat.db", count: 1000) },
              teardown: { try! engine.shutdown() })

    // The tick thread's cost of a flush: drain 10k dirty keys, copy their values, hand
    // off. An app transition (here a document switch) does it inside `flush(reason:)`.
    Benchmark("Hand-off at a flush of 10k dirty keys (tick thread)",
              configuration: .init(maxIterations: 200),
              closure: { benchmark in
                  for e in entities { engine.world.mutate(Transform.self, of: e) { $0.y += 1 } }
                  benchmark.startMeasurement()
                  engine.flush(reason: .documentSwitch)
                  benchmark.stopMeasurement()
                  engine.waitForWriter()
              },
              setup: { (engine, entities) = try! makeEngine("handoff.db", count: keys) },
              teardown: { try! engine.shutdown() })

    Benchmark("Encode a Transform payload",
              configuration: .init(scalingFactor: .kilo),
              closure: { benchmark in
                  var writer = PayloadWriter()
                  let t = Transform(x: 1, y: 2, rotation: 3, scale: 4)
                  for _ in benchmark.scaledIterations {
                      writer.reset()
                      t.encode(to: &writer)
                      blackHole(writer.bytes.count)
                  }
              })

    // Codable components against hand-written payloads (`Component+Codable.swift`): the
    // cost of the Codable machinery per component encoded (at a flush, writer thread) or
    // decoded (at reload).
    let inventoryItems = ["arrow": 20, "potion": 3, "gem": 1, "key": 2]
    let codecs: [(String, Bool, (Benchmark) -> Void)] = [
        ("Transform, hand-written", true, { roundTrips(Transform(x: 1, y: 2, rotation: 3, scale: 4), $0, encode: true) }),
        ("Transform, Codable", true, { roundTrips(CodableTransform(x: 1, y: 2, rotation: 3, scale: 4), $0, encode: true) }),
        ("Transform, hand-written", false, { roundTrips(Transform(x: 1, y: 2, rotation: 3, scale: 4), $0, encode: false) }),
        ("Transform, Codable", false, { roundTrips(CodableTransform(x: 1, y: 2, rotation: 3, scale: 4), $0, encode: false) }),
        ("Inventory, hand-written", true, { roundTrips(Inventory(owner: "ærin", level: 42, title: "scout", items: inventoryItems), $0, encode: true) }),
        ("Inventory, Codable", true, { roundTrips(CodableInventory(owner: "ærin", level: 42, title: "scout", items: inventoryItems), $0, encode: true) }),
        ("Inventory, hand-written", false, { roundTrips(Inventory(owner: "ærin", level: 42, title: "scout", items: inventoryItems), $0, encode: false) }),
        ("Inventory, Codable", false, { roundTrips(CodableInventory(owner: "ærin", level: 42, title: "scout", items: inventoryItems), $0, encode: false) }),
    ]
    for (name, encode, body) in codecs {
        Benchmark("\(encode ? "Encode" : "Decode") a payload: \(name)",
                  configuration: .init(scalingFactor: .kilo),
                  closure: { benchmark in body(benchmark) })
    }

    // Writer throughput: 10k component writes in one transaction, through the whole
    // engine (drain, hand-off, encode, append to the segment log, commit NORMAL).
    // Wall clock: flushNow() end to end. "Writer commit": the writer thread's own time
    // for the transaction, from the engine's metrics.
    Benchmark("Writer: 10k component writes, one transaction (Strata)",
              configuration: .init(metrics: [.wallClock, .throughput, writerCommitMicros, syncRequests, bytesWritten],
                                   timeUnits: .microseconds, maxIterations: 100),
              closure: { benchmark in
                  for e in entities { engine.world.mutate(Transform.self, of: e) { $0.y += 1 } }
                  let before = engine.metrics
                  benchmark.startMeasurement()
                  engine.flushNow(reason: .majorAction)   // derived: NORMAL, no checkpoint
                  benchmark.stopMeasurement()
                  let after = engine.metrics
                  benchmark.measurement(writerCommitMicros, microseconds(after.totalCommitDuration - before.totalCommitDuration))
                  if let a = after.vfs, let b = before.vfs {
                      benchmark.measurement(syncRequests, a.syncs - b.syncs)
                      benchmark.measurement(bytesWritten, a.writeBytes - b.writeBytes)
                  }
              },
              setup: { (engine, entities) = try! makeEngine("writer.db", count: keys) },
              teardown: { try! engine.shutdown() })

    // The same changes as upserts in place (the schema before the segment log) with a
    // bare sqlite3 bind/step loop: what the writer is measured against.
    var raw: RawUpsertLoop!
    var round: Int64 = 0
    Benchmark("Writer baseline: 10k upserts, raw sqlite3 bind/step loop",
              configuration: .init(metrics: [.wallClock, .throughput], timeUnits: .microseconds, maxIterations: 100),
              closure: { _ in
                  round += 1
                  raw.run(round: round)
              },
              setup: { raw = RawUpsertLoop(path: freshPath("raw.db"), rows: keys) })

    // Reload: open a database and rebuild the world (Engine.open), from base rows only,
    // and with the segment log at its hard cap (`max_backlog_mb`, 64 MB) on top.
    let reloadConfiguration = Benchmark.Configuration(metrics: [.wallClock, .peakMemoryResident], timeUnits: .milliseconds,
                                                      maxIterations: 10)
    Benchmark("Reload 100k entities x 2 components, compacted (Engine.open)",
              configuration: reloadConfiguration,
              closure: { _ in try! reload("reload.db", expecting: 100_000) },
              setup: {
                  let (built, _) = try! makeEngine("reload.db", count: 100_000, compacted: true)
                  try! built.shutdown()
              })
    Benchmark("Reload 100k entities x 2 components + 64 MB segment backlog (Engine.open)",
              configuration: reloadConfiguration,
              closure: { _ in try! reload("backlog.db", expecting: 100_000) },
              setup: { try! makeBacklog("backlog.db", backlogBytes: 64 * 1024 * 1024) })
    Benchmark("Reload 1M entities x 2 components, compacted (Engine.open)",
              configuration: .init(metrics: [.wallClock, .peakMemoryResident], timeUnits: .milliseconds, maxIterations: 5),
              closure: { _ in try! reload("reload-1m.db", expecting: 1_000_000) },
              setup: {
                  let (built, _) = try! makeEngine("reload-1m.db", count: 1_000_000, compacted: true)
                  try! built.shutdown()
              })

    // The operation log: appending a local operation on the tick thread (a 16-byte
    // payload), the writer committing 10k operations in one batch, and an open that
    // rebuilds the vector clock from a log of 1M operations.
    var logEngine: Engine!
    let payload = [UInt8](repeating: 7, count: 16)
    Benchmark("Append a local operation (tick thread)",
              configuration: .init(scalingFactor: .kilo, maxIterations: 50),
              closure: { benchmark in
                  let engine = logEngine!, count = benchmark.scaledIterations.count
                  benchmark.startMeasurement()
                  for _ in 0 ..< count { blackHole(engine.appendOperation(kind: "shape.move", payload: payload)) }
                  benchmark.stopMeasurement()
                  engine.flushNow(reason: .explicitSave)
              },
              setup: { logEngine = try! Engine.open(config: benchConfig(freshPath("oplog-append.db")), logger: quiet) },
              teardown: { try! logEngine.shutdown() })
    Benchmark("Writer: 10k operations, one transaction (flushNow end to end)",
              configuration: .init(metrics: [.wallClock, .throughput, writerCommitMicros], timeUnits: .microseconds, maxIterations: 50),
              closure: { benchmark in
                  for _ in 0 ..< 10_000 { logEngine.appendOperation(kind: "shape.move", payload: payload) }
                  let before = logEngine.metrics
                  benchmark.startMeasurement()
                  logEngine.flushNow(reason: .majorAction)
                  benchmark.stopMeasurement()
                  let after = logEngine.metrics
                  benchmark.measurement(writerCommitMicros, microseconds(after.totalCommitDuration - before.totalCommitDuration))
              },
              setup: { logEngine = try! Engine.open(config: benchConfig(freshPath("oplog-writer.db")), logger: quiet) },
              teardown: { try! logEngine.shutdown() })
    // Another device's replicated values arriving: 10k `strata.component` operations,
    // one new entity each, received in batches of 100 (as the sync applies a pull),
    // applied and handed to the writer (the tick thread's whole share; the writer's commit
    // is not in it). What a device joining a document pays.
    Benchmark("Apply 10k pulled replicated values (tick thread: receive, apply, hand-off)",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds, maxIterations: 30),
              closure: { benchmark in
                  let engine = try! Engine.open(config: benchConfig(freshPath("replicated-apply.db")), components: [Position.self], logger: quiet)
                  var batches = stride(from: 0, to: 10_000, by: 100).map { _ in [LoggedOperation]() }
                  for (i, operation) in replicatedOperations(10_000).enumerated() { batches[i / 100].append(operation) }
                  benchmark.startMeasurement()
                  for index in batches.indices {
                      var batch: [LoggedOperation] = []
                      swap(&batch, &batches[index])
                      engine.receiveOperations(consume batch)
                  }
                  engine.flush(reason: .documentSwitch)
                  benchmark.stopMeasurement()
                  try! engine.shutdown()
              })
    Benchmark("Open with 1M logged operations from 10 nodes (vector clock rebuilt from the log)",
              configuration: .init(metrics: [.wallClock, .peakMemoryResident], timeUnits: .milliseconds, maxIterations: 5),
              closure: { _ in
                  let reopened = try! Engine.open(config: benchConfig(scratch.appendingPathComponent("oplog-1m.db").path), logger: quiet)
                  precondition(reopened.recovery.operations.operations == 1_000_000)
                  try! reopened.shutdown()
              },
              setup: { try! makeOperationLog("oplog-1m.db", nodes: 10, perNode: 100_000) })
}

import ArgumentParser
import Foundation
import Logging
import Strata
import StrataPostgres

/// `strata bench-sync`: the sync's speed against a PostgreSQL server.
/// `make bench-sync` starts a private server for it.
struct SyncBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-sync",
        abstract: "Measure the sync: push throughput, commit→applied latency, a large document joining, an idle device's queries.",
        discussion: """
            For each batch size: a new document logs --operations operations (--payload bytes each) while offline; \
            then the network comes online (a connectivity source the benchmark sets, so the figure is the client's \
            own reaction, not NetworkManager's), and the outbox is pushed until the server has it all. Then another \
            node pulls the document and counts duplicates and losses.
            Then, on the default [sync] configuration: a new device joins the document of --join-operations \
            operations (ticking at 60 Hz, applying what it pulls); two devices tick at 60 Hz while one commits \
            --latency-operations operations, and the time from each commit to its application on the other is \
            measured, with the server's notifications (listen = true) and without (polling every pull_interval_ms); \
            and the listening device, left idle for --idle-seconds, counts its requests. Use a release build.
            """)

    @Option(help: "The server (a postgresql:// URL).")
    var server: String

    @Option(parsing: .unconditional, help: "Operations in the outbox.")
    var operations = 10_000

    @Option(name: .customLong("batch-sizes"), help: "Comma-separated batch sizes ([sync] batch_size).")
    var batchSizes = "50,500"

    @Option(parsing: .unconditional, help: "Payload bytes per operation.")
    var payload = 64

    @Option(name: .customLong("join-operations"), parsing: .unconditional, help: "Operations of the document a new device joins (0: no join).")
    var joinOperations = 100_000

    @Option(name: .customLong("latency-operations"), parsing: .unconditional, help: "Operations whose commit→applied time is measured, per configuration (0: none).")
    var latencyOperations = 100

    @Option(name: .customLong("idle-seconds"), parsing: .unconditional, help: "How long the idle device is watched (0: not measured).")
    var idleSeconds = 60

    @Option(name: .customLong("replicated-operations"), parsing: .unconditional,
            help: "Replicated values a new device pulls and applies (0: not measured).")
    var replicatedOperations = 10_000

    @Flag(help: "Print JSON.")
    var json = false

    struct Result: Codable {
        var batchSize: Int
        var operations: Int
        var pushOperationsPerSecond: Double
        var pushes: Int
        var onlineToFirstAckMs: Double
        var firstBatchLoadMs: Double
        var outboxMemoryBytes: Int
        var duplicatesOnServer: Int
        var missingOnServer: Int
    }

    /// Everything measured: the push per batch size, then the default configuration's figures.
    struct Report: Codable {
        var push: [Result]
        /// Commit on one device → applied on the other, default configuration (listening).
        var appliedP50Ms: Double?
        var appliedP99Ms: Double?
        /// The same without notifications (`listen = false`: a pull every `pull_interval_ms`).
        var pollingAppliedP50Ms: Double?
        var pollingAppliedP99Ms: Double?
        var joinOperations: Int?
        var joinSeconds: Double?
        /// The joining device's slowest tick (it applies what it pulls at its ends of tick).
        var joinSlowestTickMs: Double?
        /// Requests an idle, listening device made, per minute.
        var idleRequestsPerMinute: Double?
        /// Replicated components: change → applied on the other device (a derived value,
        /// logged within `replicate_interval_ms`), and commit → applied (a critical one).
        var replicatedDerivedP50Ms: Double?
        var replicatedDerivedP99Ms: Double?
        var replicatedCriticalP50Ms: Double?
        var replicatedCriticalP99Ms: Double?
        /// A new device applying `replicatedOperations` pulled values: its ends of tick in
        /// total meanwhile, the slowest, and how many.
        var replicatedOperations: Int?
        var replicatedApplyTotalMs: Double?
        var replicatedApplySlowestTickMs: Double?
        var replicatedApplySlowestFlushTickMs: Double?
        var replicatedApplyTicks: Int?
    }

    func run() throws {
        bootstrapLogging(level: .error)
        let sizes = batchSizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ (1 ... 10_000).contains($0) }), operations >= 1 else {
            throw ValidationError("--batch-sizes must be numbers from 1 to 10000, --operations positive")
        }
        var results: [Result] = []
        for size in sizes { results.append(try measure(batchSize: size)) }
        var report = Report(push: results)
        if joinOperations > 0 {
            report.joinOperations = joinOperations
            (report.joinSeconds, report.joinSlowestTickMs) = try measureJoin()
        }
        if latencyOperations > 0 {
            let listening = try measureLatency(listen: true)
            let polling = try measureLatency(listen: false)
            (report.appliedP50Ms, report.appliedP99Ms) = (listening.p50, listening.p99)
            (report.pollingAppliedP50Ms, report.pollingAppliedP99Ms) = (polling.p50, polling.p99)
        }
        if latencyOperations > 0 {
            (report.replicatedDerivedP50Ms, report.replicatedDerivedP99Ms) = try measureReplicatedLatency(critical: false)
            (report.replicatedCriticalP50Ms, report.replicatedCriticalP99Ms) = try measureReplicatedLatency(critical: true)
        }
        if replicatedOperations > 0 {
            report.replicatedOperations = replicatedOperations
            let apply = try measureReplicatedApply()
            (report.replicatedApplyTotalMs, report.replicatedApplySlowestTickMs, report.replicatedApplyTicks) = (apply.totalMs, apply.slowestTickMs, apply.ticks)
            report.replicatedApplySlowestFlushTickMs = apply.slowestFlushTickMs
        }
        if idleSeconds > 0 { report.idleRequestsPerMinute = try measureIdle() }
        if json {
            try sayJSON(report)
            return
        }
        say("batch  operations  push ops/s  pushes  online→first ack  first batch load  outbox memory  duplicates  missing")
        for r in results {
            say(String(format: "%5d  %10d  %10.0f  %6d  %13.1f ms  %13.2f ms  %10.1f MB  %10d  %7d", r.batchSize, r.operations,
                       r.pushOperationsPerSecond, r.pushes, r.onlineToFirstAckMs, r.firstBatchLoadMs,
                       Double(r.outboxMemoryBytes) / 1_048_576, r.duplicatesOnServer, r.missingOnServer))
        }
        if let seconds = report.joinSeconds, let slowest = report.joinSlowestTickMs {
            say(String(format: "a new device joined a document of %d operations in %.1f s, committed (%.0f operations/s, "
                       + "ticking at 60 Hz; slowest tick %.1f ms)", joinOperations, seconds, Double(joinOperations) / seconds, slowest))
        }
        if let p50 = report.appliedP50Ms, let p99 = report.appliedP99Ms, let p50p = report.pollingAppliedP50Ms,
           let p99p = report.pollingAppliedP99Ms {
            say(String(format: "commit on one device → applied on the other (%d operations): p50 %.1f ms, p99 %.1f ms listening; "
                       + "p50 %.1f ms, p99 %.1f ms polling every %d ms", latencyOperations, p50, p99, p50p, p99p,
                       Int(SyncConfig().pullInterval.milliseconds)))
        }
        if let p50 = report.replicatedDerivedP50Ms, let p99 = report.replicatedDerivedP99Ms,
           let p50c = report.replicatedCriticalP50Ms, let p99c = report.replicatedCriticalP99Ms {
            say(String(format: "replicated components: change → applied p50 %.1f ms, p99 %.1f ms (derived, logged within the critical delay); "
                       + "commit → applied p50 %.1f ms, p99 %.1f ms (critical)", p50, p99, p50c, p99c))
        }
        if let total = report.replicatedApplyTotalMs, let slowest = report.replicatedApplySlowestTickMs, let ticks = report.replicatedApplyTicks,
           let flush = report.replicatedApplySlowestFlushTickMs {
            say(String(format: "a new device applied %d pulled replicated values: %.1f ms of its ticks in total, over %d ticks; "
                       + "slowest tick %.2f ms applying, %.2f ms flushing", replicatedOperations, total, ticks, slowest, flush))
        }
        if let idle = report.idleRequestsPerMinute {
            say(String(format: "an idle listening device: %.1f requests a minute (watched %d s)", idle, idleSeconds))
        }
    }

    // MARK: Two devices on the default configuration

    /// A device on the default `[sync]` configuration (the network assumed online), in `folder`.
    func device(_ name: String, document: String, in folder: URL, listen: Bool = true,
                types: [any Component.Type] = []) throws -> Engine {
        var config = StrataConfig()
        config.database.path = folder.appendingPathComponent("\(name).db").path
        config.sync.server = server
        config.sync.document = document
        config.sync.networkSource = .none
        config.sync.listen = listen
        return try Engine.open(config: config, components: types, logger: Logger(label: "strata", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    func scratchFolder(_ what: String) throws -> URL {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory() + "strata-bench-sync-\(getpid())-\(what)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static let tick = 1.0 / 60

    /// A document of `--join-operations` operations from one device (pushed in batches of
    /// 500, not measured), then a new device joins it: from the start of its sync to the
    /// last operation applied and committed, ticking at 60 Hz; and the slowest tick meanwhile.
    private func measureJoin() throws -> (seconds: Double, slowestTickMs: Double) {
        let folder = try scratchFolder("join")
        defer { try? FileManager.default.removeItem(at: folder) }
        let document = "join-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let author = try device("author", document: document, in: folder)
        let body = [UInt8](repeating: 0xCD, count: payload)
        for i in 0 ..< joinOperations {
            author.appendOperation(kind: "bench.join", payload: body)
            if i % 1000 == 999 { author.endTick() }
        }
        author.endTick()
        guard author.flushNow(timeout: .seconds(300)) else { throw ValidationError("the document did not commit") }
        try pushEverything(author, document: document, operations: joinOperations)

        let joiner = try device("joiner", document: document, in: folder)
        defer { try? joiner.shutdown() }
        nonisolated(unsafe) var applied = 0
        let start = ContinuousClock.now
        var slowestTick = Duration.zero
        joiner.startSync(transport: try PostgresTransport(url: server, document: document)) { _ in applied += 1 }
        while applied < joinOperations {
            let tick = ContinuousClock.now
            joiner.endTick()
            slowestTick = max(slowestTick, .now - tick)
            guard ContinuousClock.now - start < .seconds(600) else { throw ValidationError("the join did not finish in 600 s") }
            Thread.sleep(forTimeInterval: Self.tick)
        }
        guard joiner.flushNow(timeout: .seconds(120)) else { throw ValidationError("the joined operations did not commit") }
        return (seconds: (ContinuousClock.now - start).seconds, slowestTickMs: slowestTick.milliseconds)
    }

    /// Pushes `author`'s committed operations to the server until it acknowledged `operations`
    /// of them (ticking meanwhile), then shuts it down.
    func pushEverything(_ author: Engine, document: String, operations: Int) throws {
        author.startSync(transport: try PostgresTransport(url: server, document: document)) { _ in }
        let pushStart = ContinuousClock.now
        while (author.sync?.acknowledgedThrough ?? 0) < Int64(operations) {
            author.endTick()
            guard ContinuousClock.now - pushStart < .seconds(600) else { throw ValidationError("the document was not pushed in 600 s") }
            Thread.sleep(forTimeInterval: 0.005)
        }
        try author.shutdown()
    }

    /// Two devices ticking at 60 Hz; every 100 ms one logs an operation and commits it
    /// (`flushNow`: the time of the commit is known); the other records when its hook
    /// applies it. Returns the p50 and p99 of commit → applied, in ms.
    private func measureLatency(listen: Bool) throws -> (p50: Double, p99: Double) {
        let folder = try scratchFolder("latency-\(listen)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let document = "latency-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let a = try device("a", document: document, in: folder, listen: listen)
        let b = try device("b", document: document, in: folder, listen: listen)
        defer { try? a.shutdown(); try? b.shutdown() }
        nonisolated(unsafe) var appliedAt: [EntityID: ContinuousClock.Instant] = [:]
        a.startSync(transport: try PostgresTransport(url: server, document: document)) { _ in }
        b.startSync(transport: try PostgresTransport(url: server, document: document)) { appliedAt[$0.id] = .now }
        // Both connected (and listening, when they listen) before the first operation.
        let ready = ContinuousClock.now
        while !((a.sync?.online ?? false) && (b.sync?.online ?? false) && (!listen || b.sync?.listening == true)) {
            guard ContinuousClock.now - ready < .seconds(30) else { throw ValidationError("the devices did not connect in 30 s") }
            a.endTick(); b.endTick()
            Thread.sleep(forTimeInterval: Self.tick)
        }
        var committedAt: [EntityID: ContinuousClock.Instant] = [:]
        var nextOperation = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(Double(latencyOperations) * 0.1 + 60)
        while appliedAt.count < latencyOperations {
            guard ContinuousClock.now < deadline else { throw ValidationError("operations were not applied in time") }
            if committedAt.count < latencyOperations && ContinuousClock.now >= nextOperation {
                let operation = a.appendOperation(kind: "bench.latency", payload: [1, 2, 3])
                a.endTick()
                guard a.flushNow(timeout: .seconds(10)) else { throw ValidationError("a commit failed") }
                committedAt[operation.id] = .now
                nextOperation = .now + .milliseconds(100)
            } else {
                a.endTick()
            }
            b.endTick()
            Thread.sleep(forTimeInterval: Self.tick)
        }
        let latencies = committedAt.compactMap { id, at in appliedAt[id].map { ($0 - at).milliseconds } }.sorted()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)] }
        return (percentile(0.5), percentile(0.99))
    }

    /// A listening device with nothing to do: its requests to the server per minute.
    private func measureIdle() throws -> Double {
        let folder = try scratchFolder("idle")
        defer { try? FileManager.default.removeItem(at: folder) }
        let idle = try device("idle", document: "idle-\(getpid())-\(UInt32.random(in: 0 ... .max))", in: folder)
        defer { try? idle.shutdown() }
        idle.startSync(transport: try PostgresTransport(url: server, document: idle.config.sync.document)) { _ in }
        let ready = ContinuousClock.now
        while idle.sync?.listening != true || idle.sync?.notifiedPulls == 0 {
            guard ContinuousClock.now - ready < .seconds(30) else { throw ValidationError("the device did not connect in 30 s") }
            idle.endTick()
            Thread.sleep(forTimeInterval: Self.tick)
        }
        let before = idle.sync?.requests ?? 0
        let start = ContinuousClock.now
        while ContinuousClock.now - start < .seconds(idleSeconds) {
            idle.endTick()
            Thread.sleep(forTimeInterval: Self.tick)
        }
        return Double((idle.sync?.requests ?? before) - before) / (Double(idleSeconds) / 60)
    }
}

/// A connectivity source the benchmark switches itself.
final class SwitchedConnectivity: ConnectivitySource, @unchecked Sendable {
    private let lock = NSLock()
    private var current = Connectivity.offline
    private var changes = 1

    var connectivity: Connectivity { lock.withLock { current } }
    var changeCount: Int { lock.withLock { changes } }

    func set(_ value: Connectivity) {
        lock.withLock { current = value; changes += 1 }
    }
}

/// Runs async code from a command's thread and waits for it.
func blockingCall(_ body: @escaping @Sendable () async throws -> Void) throws {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var failure: (any Error)?
    Task {
        do { try await body() } catch { failure = error }
        done.signal()
    }
    done.wait()
    if let failure { throw failure }
}

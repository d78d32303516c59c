import ArgumentParser
import Foundation
import Logging
import Strata
import StrataPostgres

/// `strata bench-sync`: the sync's speed against a PostgreSQL server (issue 12's targets).
/// `make bench-sync` starts a private server for it.
struct SyncBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-sync",
        abstract: "Measure the sync: push throughput, the outbox's memory and first-batch load, online→first acknowledged push.",
        discussion: """
            For each batch size: a new document logs --operations operations (--payload bytes each) while offline; \
            then the network comes online (a connectivity source the benchmark sets, so the figure is the client's \
            own reaction, not NetworkManager's), and the outbox is pushed until the server has it all. Then another \
            node pulls the document and counts duplicates and losses. Use a release build.
            """)

    @Option(help: "The server (a postgresql:// URL).")
    var server: String

    @Option(parsing: .unconditional, help: "Operations in the outbox.")
    var operations = 10_000

    @Option(name: .customLong("batch-sizes"), help: "Comma-separated batch sizes ([sync] batch_size).")
    var batchSizes = "50,500"

    @Option(parsing: .unconditional, help: "Payload bytes per operation.")
    var payload = 64

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

    func run() throws {
        bootstrapLogging(level: .error)
        let sizes = batchSizes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ (1 ... 10_000).contains($0) }), operations >= 1 else {
            throw ValidationError("--batch-sizes must be numbers from 1 to 10000, --operations positive")
        }
        var results: [Result] = []
        for size in sizes { results.append(try measure(batchSize: size)) }
        if json {
            try sayJSON(results)
            return
        }
        say("batch  operations  push ops/s  pushes  online→first ack  first batch load  outbox memory  duplicates  missing")
        for r in results {
            say(String(format: "%5d  %10d  %10.0f  %6d  %13.1f ms  %13.2f ms  %10.1f MB  %10d  %7d", r.batchSize, r.operations,
                       r.pushOperationsPerSecond, r.pushes, r.onlineToFirstAckMs, r.firstBatchLoadMs,
                       Double(r.outboxMemoryBytes) / 1_048_576, r.duplicatesOnServer, r.missingOnServer))
        }
    }

    private func measure(batchSize: Int) throws -> Result {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory() + "strata-bench-sync-\(getpid())-\(batchSize)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var config = StrataConfig()
        config.database.path = folder.appendingPathComponent("bench.db").path
        config.sync.server = server
        config.sync.document = "bench-\(getpid())-\(batchSize)-\(UInt32.random(in: 0 ... .max))"
        config.sync.batchSize = batchSize
        config.sync.pushInterval = .milliseconds(1)
        config.sync.networkSource = .none
        let logger = Logger(label: "strata", factory: { _ in SwiftLogNoOpLogHandler() })
        let engine = try Engine.open(config: config, components: [], logger: logger)

        // The outbox: every operation logged and committed while offline.
        let before = residentBytes()
        let body = [UInt8](repeating: 0xAB, count: payload)
        for i in 0 ..< operations {
            engine.appendOperation(kind: "bench.op", payload: body)
            if i % 1000 == 999 { engine.endTick() }
        }
        guard engine.flushNow(timeout: .seconds(120)) else { throw ValidationError("the outbox did not commit") }
        let outboxMemory = max(0, residentBytes() - before)
        var loads: [Double] = []
        for _ in 0 ..< 20 {
            let start = ContinuousClock.now
            _ = try engine.nextSyncBatch(limit: batchSize)
            loads.append((ContinuousClock.now - start).milliseconds)
        }

        let network = SwitchedConnectivity()
        let transport = try PostgresTransport(url: server, document: config.sync.document)
        engine.startSync(transport: transport, network: network) { _ in }
        Thread.sleep(forTimeInterval: 0.3)   // the client sees "offline" first
        let online = ContinuousClock.now
        network.set(.online)
        while (engine.sync?.acknowledgedThrough ?? 0) < Int64(operations) {
            engine.endTick()
            guard ContinuousClock.now - online < .seconds(300) else { throw ValidationError("the push did not finish in 300 s") }
            Thread.sleep(forTimeInterval: 0.001)
        }
        let elapsed = ContinuousClock.now - online
        let state = engine.sync!
        try engine.shutdown()

        // Exactly once: another node reads the whole document back.
        let reader = try PostgresTransport(url: server, document: config.sync.document)
        nonisolated(unsafe) var ids: [EntityID] = []
        try blockingCall {
            var cursor: Int64 = 0
            var read: [EntityID] = []
            while true {
                let page = try await reader.pull(excluding: NodeID(), clock: [:], after: cursor, limit: 5000)
                read += page.operations.map(\.id)
                cursor = page.cursor
                if !page.hasMore { break }
            }
            await reader.disconnect()
            ids = read
        }
        let distinct = Set(ids).count
        return Result(batchSize: batchSize, operations: operations, pushOperationsPerSecond: Double(operations) / elapsed.seconds,
                      pushes: state.pushes,
                      onlineToFirstAckMs: Double(firstAck(state)),
                      firstBatchLoadMs: loads.sorted()[loads.count / 2], outboxMemoryBytes: outboxMemory,
                      duplicatesOnServer: ids.count - distinct, missingOnServer: operations - distinct)
    }

    /// From coming online to the first acknowledged push (wall ms).
    private func firstAck(_ state: SyncClient.State) -> Int64 {
        guard let came = state.cameOnlineAt, let first = state.firstPushAt else { return 0 }
        return first - came
    }

    private func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
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

import ArgumentParser
import Foundation
import Logging
import Strata
import StrataPostgres

/// The push: an outbox logged offline, pushed once the network comes online, then read
/// back whole by another node (duplicates, losses).
extension SyncBenchCommand {
    func measure(batchSize: Int) throws -> Result {
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
        guard let state = engine.sync else { throw ValidationError("the device stopped syncing") }
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
    func firstAck(_ state: SyncState) -> Int64 {
        guard let came = state.cameOnlineAt, let first = state.firstPushAt else { return 0 }
        return first - came
    }

    func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }
}

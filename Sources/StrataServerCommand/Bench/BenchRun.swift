import Foundation
import NIOHTTP1
import StrataPQ
import StrataServer
import StrataWire

/// The bench's phases:
/// 1. members for every device (`device-i`, writer of document `i % documents`) and the
///    instance started (`strata-server serve`, a child process, its own pool and feed);
/// 2. every device connects and live-pulls its document; the instance's resident memory
///    before and after, divided by the devices, is the memory per idle device;
/// 3. `pushers` devices push one operation a second each for `seconds` (on a connection
///    of their own, as a device's transport has one for calls and one for listening); every
///    other device of the document receives it by its live pull: commit → applied;
/// 4. eight pushers push batches of 500 to documents of their own as fast as they can for
///    `pushSeconds`: operations stored per second;
/// 5. two more instances, the first SIGKILLed half-way through `failoverSeconds`
///    (``BenchFailover``): nothing lost, stored twice or delivered twice.
/// PostgreSQL's connections of the instance (`application_name`) are sampled throughout.
struct BenchRun {
    let database: String
    let devices: Int
    let documents: Int
    let pushers: Int
    let seconds: Int
    let pushSeconds: Int
    let poolSize: Int
    let failoverSeconds: Int
    let failoverDevices: Int
    let say: (String) -> Void
    let runID = String(UUID().uuidString.prefix(8)).lowercased()
    let folder: String
    let key: TokenKey

    init(database: String, devices: Int, documents: Int, pushers: Int, seconds: Int, pushSeconds: Int, poolSize: Int,
         failoverSeconds: Int, failoverDevices: Int, say: @escaping (String) -> Void) throws {
        self.failoverSeconds = failoverSeconds
        self.failoverDevices = failoverDevices
        self.database = database
        self.devices = devices
        self.documents = documents
        self.pushers = pushers
        self.seconds = seconds
        self.pushSeconds = pushSeconds
        self.poolSize = poolSize
        self.say = say
        folder = NSTemporaryDirectory() + "strata-server-bench-\(runID)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let secret = TokenKey.randomSecret()
        guard FileManager.default.createFile(atPath: "\(folder)/secret", contents: Data(secret)) else {
            throw BenchError("cannot write \(folder)/secret")
        }
        key = try TokenKey(id: nil, secret: secret)
    }

    func document(_ index: Int) -> String { "bench-\(runID)-doc-\(index)" }
    func token(_ subject: String) throws -> String {
        try TokenSigner.token(subject: subject, audience: "strata", key: key, ttl: .seconds(3600))
    }

    mutating func run() async throws -> BenchReport {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try grantEveryone()
        let server = try BenchServer(database: database, folder: folder, poolSize: poolSize)
        defer { server.stop() }
        let sampler = ConnectionSampler(database: database, pattern: "strata-server-%")
        sampler.start()
        defer { sampler.stop() }
        say("instance on port \(server.port); \(devices) devices on \(documents) documents")

        // 2. Every device live-pulls.
        let latencies = LatencyLog()
        let stop = StopFlag()
        try await warmUp(server.port)
        let baseline = server.residentBytes
        let ready = ReadyCount()
        var listeners: [Task<Void, Never>] = []
        for wave in stride(from: 0, to: devices, by: 250) {
            for i in wave ..< min(devices, wave + 250) {
                let (token, document) = (try token("device-\(i)"), document(i % documents))
                let port = server.port
                listeners.append(Task { await Self.listen(port: port, token: token, document: document, ready: ready, latencies: latencies, stop: stop) })
            }
            while ready.count < min(devices, wave + 250) && ready.failed == 0 { try await Task.sleep(for: .milliseconds(20)) }
        }
        try await Task.sleep(for: .seconds(3))
        let idle = server.residentBytes
        let waiting = ready.count
        say("\(waiting) devices waiting; instance RSS \(baseline / 1_048_576) → \(idle / 1_048_576) MB")

        // 3. One a second each.
        latencies.recording = true
        try await withThrowingTaskGroup(of: Void.self) { group in
            for j in 0 ..< pushers {
                let (token, document, port, seconds) = (try token("device-\(j)"), document(j % documents), server.port, seconds)
                group.addTask { try await Self.pushOneASecond(port: port, token: token, document: document, seconds: seconds) }
            }
            try await group.waitForAll()
        }
        try await Task.sleep(for: .seconds(1))
        latencies.recording = false
        let (p50, p99, count) = latencies.percentiles()
        say("commit → applied: p50 \(String(format: "%.1f", p50)) ms, p99 \(String(format: "%.1f", p99)) ms over \(count) deliveries")

        // 4. As fast as possible.
        let stored = Counter()
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(pushSeconds) * 1_000_000_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for k in 0 ..< 8 {
                let (token, document, port) = (try token("pusher-\(k)"), "bench-\(runID)-push-\(k)", server.port)
                group.addTask { try await Self.pushFast(port: port, token: token, document: document, until: end, stored: stored) }
            }
            try await group.waitForAll()
        }
        let rate = Double(stored.value) / Double(pushSeconds)
        say("push: \(Int(rate)) operations/s")
        stop.stop()
        for listener in listeners { listener.cancel() }
        server.stop()

        // 5. Two instances, one killed.
        let key = key
        let failover = failoverSeconds == 0 ? nil : try await BenchFailover(
            database: database, folder: folder, runID: runID, devices: failoverDevices, seconds: failoverSeconds,
            token: { try TokenSigner.token(subject: $0, audience: "strata", key: key, ttl: .seconds(3600)) }, say: say).run()
        return BenchReport(devices: devices, documents: documents, pushers: pushers, poolSize: poolSize,
                           pgConnectionsMax: sampler.maximum, devicesWaiting: waiting, appliedP50: p50, appliedP99: p99,
                           appliedCount: count, pushedOperationsPerSecond: rate,
                           idleDeviceBytes: max(0, idle - baseline) / max(1, waiting), serverRSSBaseline: baseline, serverRSSIdle: idle,
                           failover: failover)
    }

    /// Members: every device a writer of its document, each fast pusher of its own.
    private func grantEveryone() throws {
        let connection = try PGConnection(conninfo: database, timeout: .seconds(60))
        defer { connection.close() }
        _ = try SyncSchema.prepare(connection)
        try connection.query("""
            INSERT INTO strata_members (document, subject, role)
            SELECT 'bench-' || $1 || '-doc-' || (i % $2), 'device-' || i, 'writer' FROM generate_series(0, $3 - 1) AS i
            """, [runID, String(documents), String(devices)])
        try connection.query("""
            INSERT INTO strata_members (document, subject, role)
            SELECT 'bench-' || $1 || '-push-' || k, 'pusher-' || k, 'writer' FROM generate_series(0, 7) AS k
            """, [runID])
    }

    private func warmUp(_ port: Int) async throws {
        let token = try token("device-0")
        let path = SyncWire.path(document: document(0), "info")
        _ = try await BenchConnection.with(port: port) { exchange in
            for _ in 0 ..< 20 { _ = try await exchange.send(.GET, path, token: token, body: []) }
        }
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// A device that live-pulls its document until stopped; records when each timed
    /// operation arrived.
    static func listen(port: Int, token: String, document: String, ready: ReadyCount, latencies: LatencyLog, stop: StopFlag) async {
        let node = UUID()
        let path = SyncWire.path(document: document, "pull")
        do {
            try await BenchConnection.with(port: port) { exchange in
                var cursor: Int64 = 0
                var first = true
                while !stop.stopped && !Task.isCancelled {
                    let request = SyncWire.PullRequest(exclude: node, clock: [:], after: cursor, limit: 500, waitMilliseconds: first ? 0 : 20_000)
                    let (status, body) = try await exchange.send(.POST, path, token: token, body: Array(try JSONEncoder().encode(request)))
                    guard status == 200 else { throw BenchError("pull: HTTP \(status)") }
                    let page = try JSONDecoder().decode(SyncWire.PullResponse.self, from: Data(body))
                    let arrived = now()
                    for operation in page.operations where operation.payload.count == 8 {
                        let sent = operation.payload.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                        latencies.note(Double(arrived &- sent) / 1e6)
                    }
                    cursor = page.cursor
                    if first {
                        first = false
                        ready.add()
                    }
                }
            }
        } catch {
            if !stop.stopped { ready.fail() }
        }
    }

    static func pushOneASecond(port: Int, token: String, document: String, seconds: Int) async throws {
        let node = UUID()
        let path = SyncWire.path(document: document, "push")
        try await Task.sleep(for: .milliseconds(Int.random(in: 0 ..< 1000)))
        try await BenchConnection.with(port: port) { exchange in
            for seq in 1 ... Int64(seconds) {
                let started = now()
                var stamp = started
                let payload = Data(bytes: &stamp, count: 8)
                let operation = SyncWire.Operation(id: UUID(), node: node, seq: seq, hlc: seq << 16, kind: "bench", payload: payload)
                let (status, _) = try await exchange.send(.POST, path, token: token,
                                                          body: Array(try JSONEncoder().encode(SyncWire.PushRequest(operations: [operation]))))
                guard status == 200 else { throw BenchError("push: HTTP \(status)") }
                let spent = now() - started
                if spent < 1_000_000_000 { try await Task.sleep(for: .nanoseconds(Int64(1_000_000_000 - spent))) }
            }
        }
    }

    static func pushFast(port: Int, token: String, document: String, until end: UInt64, stored: Counter) async throws {
        let node = UUID()
        let path = SyncWire.path(document: document, "push")
        try await BenchConnection.with(port: port) { exchange in
            var seq: Int64 = 0
            while now() < end {
                let batch = (0 ..< 500).map { _ -> SyncWire.Operation in
                    seq += 1
                    return SyncWire.Operation(id: UUID(), node: node, seq: seq, hlc: seq << 16, kind: "bench", payload: Data(repeating: 1, count: 32))
                }
                let (status, body) = try await exchange.send(.POST, path, token: token,
                                                             body: Array(try JSONEncoder().encode(SyncWire.PushRequest(operations: batch))))
                guard status == 200 else { throw BenchError("push: HTTP \(status)") }
                stored.add(try JSONDecoder().decode(SyncWire.PushResponse.self, from: Data(body)).inserted)
            }
        }
    }
}

import Foundation
import StrataPQ
import StrataWire

/// The bench's last phase: two instances on one PostgreSQL, the first SIGKILLed mid-run.
/// `devices` virtual devices (writers of ten documents of their own), each pushing one
/// operation every 100 ms on one connection and live-pulling its document on another, as a
/// device's transport does, start on instance A. Half-way, A is SIGKILLed: every device
/// carries on through B (a push that got no answer is sent again, the same operation: the
/// service takes it once; a pull goes on from its cursor). Then, from PostgreSQL and from
/// what each device received: every operation acknowledged is stored once, none is lost,
/// and every device received each of the others' operations once.
struct BenchFailover {
    let database: String
    let folder: String
    let runID: String
    let devices: Int
    let seconds: Int
    let token: (String) throws -> String
    let say: (String) -> Void

    struct Outcome {
        var devices = 0
        var acknowledged = 0
        var stored = 0
        var lost = 0
        var deliveriesExpected = 0
        var deliveriesMissing = 0
        var deliveriesDuplicated = 0
        /// From the kill to a device's first push answered by B, the longest.
        var longestSwitchMilliseconds = 0.0
    }

    func document(_ index: Int) -> String { "bench-\(runID)-failover-\(index % 10)" }

    func run() async throws -> Outcome {
        let connection = try PGConnection(conninfo: database, timeout: .seconds(60))
        defer { connection.close() }
        try connection.query("""
            INSERT INTO strata_members (document, subject, role)
            SELECT 'bench-' || $1 || '-failover-' || (i % 10), 'failover-' || i, 'writer' FROM generate_series(0, $2 - 1) AS i
            """, [runID, String(devices)])
        let first = try BenchServer(database: database, folder: folder, poolSize: 4)
        let second = try BenchServer(database: database, folder: folder, poolSize: 4)
        defer { first.stop(); second.stop() }
        say("failover: \(devices) devices on instance \(first.port), instance \(second.port) beside it")
        let ports = [first.port, second.port]
        let killedAt = Stamp()
        let stop = StopFlag()
        let end = BenchRun.now() + UInt64(seconds) * 1_000_000_000
        let nodes = (0 ..< devices).map { _ in UUID() }
        var pushers: [Task<(Int64, Double), any Error>] = []
        var listeners: [Task<Received, Never>] = []
        for i in 0 ..< devices {
            let (token, document, node) = (try token("failover-\(i)"), document(i), nodes[i])
            pushers.append(Task { try await Self.push(ports: ports, token: token, document: document, node: node, until: end, killedAt: killedAt) })
            listeners.append(Task { await Self.listen(ports: ports, token: token, document: document, node: node, stop: stop) })
        }
        try await Task.sleep(for: .seconds(Double(seconds) / 2))
        kill(first.process.processIdentifier, SIGKILL)
        killedAt.set(BenchRun.now())
        say("failover: instance \(first.port) SIGKILLed")
        var acknowledged: [UUID: Int64] = [:]
        var outcome = Outcome(devices: devices)
        for (i, pusher) in pushers.enumerated() {
            let (count, switchMilliseconds) = try await pusher.value
            acknowledged[nodes[i]] = count
            outcome.longestSwitchMilliseconds = max(outcome.longestSwitchMilliseconds, switchMilliseconds)
        }
        try await Task.sleep(for: .seconds(3))   // the last pushes reach every live pull
        stop.stop()
        var received: [Received] = []
        for listener in listeners {
            listener.cancel()
            received.append(await listener.value)
        }

        let rows = try connection.query("""
            SELECT node::text, count(*), max(seq) FROM strata_operations WHERE document LIKE 'bench-' || $1 || '-failover-%' GROUP BY node
            """, [runID])
        var stored: [UUID: (count: Int, highest: Int64)] = [:]
        for fields in rows where fields.count == 3 {
            guard let node = fields[0].flatMap(UUID.init(uuidString:)), let count = fields[1].flatMap({ Int($0) }),
                  let highest = fields[2].flatMap({ Int64($0) }) else { continue }
            stored[node] = (count, highest)
        }
        for (i, node) in nodes.enumerated() {
            let mine = acknowledged[node] ?? 0
            outcome.acknowledged += Int(mine)
            outcome.stored += stored[node]?.count ?? 0
            outcome.lost += max(0, Int(mine) - (stored[node]?.count ?? 0))
            // Every other device of the document received this one's acknowledged operations once.
            for (j, other) in received.enumerated() where j != i && j % 10 == i % 10 {
                outcome.deliveriesExpected += Int(mine)
                let got = other.counts[node] ?? [:]
                outcome.deliveriesMissing += (1 ... max(1, mine)).filter { mine > 0 && got[$0] == nil }.count
                outcome.deliveriesDuplicated += got.values.filter { $0 > 1 }.count
            }
        }
        say("failover: \(outcome.acknowledged) operations acknowledged, \(outcome.stored) stored, \(outcome.lost) lost; "
            + "\(outcome.deliveriesMissing) of \(outcome.deliveriesExpected) deliveries missing, \(outcome.deliveriesDuplicated) twice; "
            + "longest switch \(Int(outcome.longestSwitchMilliseconds)) ms")
        return outcome
    }

    /// What one device received: per node, per sequence, how many times.
    struct Received: Sendable { var counts: [UUID: [Int64: Int]] = [:] }

    /// One operation every 100 ms until `end`, through A and then B: an operation without an
    /// answer is sent again. Returns how many were acknowledged and how long after the kill
    /// the first answer from B came.
    static func push(ports: [Int], token: String, document: String, node: UUID, until end: UInt64, killedAt: Stamp) async throws -> (Int64, Double) {
        let path = SyncWire.path(document: document, "push")
        var acknowledged: Int64 = 0
        var instance = 0
        var switchMilliseconds = 0.0
        while BenchRun.now() < end {
            do {
                try await BenchConnection.with(port: ports[instance]) { exchange in
                    while BenchRun.now() < end {
                        let seq = acknowledged + 1
                        let operation = SyncWire.Operation(id: UUID(uuid: Self.id(node, seq)), node: node, seq: seq, hlc: seq << 16,
                                                           kind: "bench.failover", payload: Data(count: 16))
                        let (status, _) = try await exchange.send(.POST, path, token: token,
                                                                  body: Array(try JSONEncoder().encode(SyncWire.PushRequest(operations: [operation]))))
                        guard status == 200 else { throw BenchError("push: HTTP \(status)") }
                        acknowledged = seq
                        if instance == 1, switchMilliseconds == 0, let killed = killedAt.value {
                            switchMilliseconds = Double(BenchRun.now() &- killed) / 1e6
                        }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
            } catch {
                if instance == 0, killedAt.value != nil { instance = 1 } else { try await Task.sleep(for: .milliseconds(100)) }
            }
        }
        return (acknowledged, switchMilliseconds)
    }

    /// The same operation has the same id however often it is sent.
    static func id(_ node: UUID, _ seq: Int64) -> uuid_t {
        var bytes = node.uuid
        withUnsafeMutableBytes(of: &bytes) { raw in
            withUnsafeBytes(of: seq.bigEndian) { for k in 0 ..< 8 { raw[8 + k] = $0[k] } }
        }
        return bytes
    }

    /// Live-pulls `document` through A, then B, from its cursor, until stopped.
    static func listen(ports: [Int], token: String, document: String, node: UUID, stop: StopFlag) async -> Received {
        let path = SyncWire.path(document: document, "pull")
        var received = Received()
        var cursor: Int64 = 0
        var instance = 0
        while !stop.stopped {
            do {
                try await BenchConnection.with(port: ports[instance]) { exchange in
                    while !stop.stopped {
                        let request = SyncWire.PullRequest(exclude: node, clock: [:], after: cursor, limit: 500, waitMilliseconds: 1_000)
                        let (status, body) = try await exchange.send(.POST, path, token: token, body: Array(try JSONEncoder().encode(request)))
                        guard status == 200 else { throw BenchError("pull: HTTP \(status)") }
                        let page = try JSONDecoder().decode(SyncWire.PullResponse.self, from: Data(body))
                        for operation in page.operations { received.counts[operation.node, default: [:]][operation.seq, default: 0] += 1 }
                        cursor = page.cursor
                    }
                }
            } catch {
                instance = 1
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        return received
    }
}

/// An instant set once, read from any task.
final class Stamp: @unchecked Sendable {
    // @unchecked Sendable: under `lock`.
    private let lock = NSLock()
    private var stamp: UInt64?
    var value: UInt64? { lock.withLock { stamp } }
    func set(_ value: UInt64) { lock.withLock { stamp = value } }
}

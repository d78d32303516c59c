import Foundation
import StrataPQ

/// The instance under test: `strata-server serve` (this executable), its port, its memory.
final class BenchServer {
    let process = Process()
    let port: Int

    init(database: String, folder: String, poolSize: Int) throws {
        let config = """
            [server]
            listen = "127.0.0.1:0"
            max_pull_wait_secs = 20
            [database]
            pool_size = \(poolSize)
            [auth]
            hmac_secret_file = "\(folder)/secret"
            [limits]
            requests_per_second = 1000000
            burst = 1000000
            """
        try config.write(toFile: "\(folder)/server.toml", atomically: true, encoding: .utf8)
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        process.executableURL = URL(fileURLWithPath: me)
        process.arguments = ["serve", "--config", "\(folder)/server.toml", "--database", database, "--log-level", "error"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
        var found: Int?
        var text = ""
        while found == nil {
            let data = out.fileHandleForReading.availableData
            guard !data.isEmpty else { throw BenchError("the instance ended before it listened") }
            text += String(decoding: data, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.contains("listening on http://") }),
               let last = line.split(separator: ":").last {
                found = Int(last)
            }
        }
        port = found ?? 0
    }

    /// VmRSS of the instance.
    var residentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
        return kb * 1024
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

/// The most connections whose `application_name` matches, sampled every 250 ms on a thread.
final class ConnectionSampler: @unchecked Sendable {
    // @unchecked Sendable: `maximumSeen` and `running` are under `lock`.
    private let database: String
    private let pattern: String
    private let lock = NSLock()
    private var maximumSeen = 0
    private var running = true
    private let done = DispatchSemaphore(value: 0)

    init(database: String, pattern: String) {
        self.database = database
        self.pattern = pattern
    }

    var maximum: Int { lock.withLock { maximumSeen } }

    func start() {
        Thread.detachNewThread { [self] in
            let connection = try? PGConnection(conninfo: database, timeout: .seconds(10))
            while lock.withLock({ running }) {
                if let rows = try? connection?.query("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1", [pattern]),
                   let count = rows.first?.first.flatMap({ $0 }).flatMap({ Int($0) }) {
                    lock.withLock { maximumSeen = max(maximumSeen, count) }
                }
                Thread.sleep(forTimeInterval: 0.25)
            }
            connection?.close()
            done.signal()
        }
    }

    func stop() {
        lock.withLock { running = false }
        done.wait()
    }
}

final class LatencyLog: @unchecked Sendable {
    // @unchecked Sendable: under `lock`.
    private let lock = NSLock()
    private var values: [Double] = []
    private var on = false

    var recording: Bool {
        get { lock.withLock { on } }
        set { lock.withLock { on = newValue } }
    }

    func note(_ milliseconds: Double) {
        lock.withLock { if on { values.append(milliseconds) } }
    }

    func percentiles() -> (Double, Double, Int) {
        let sorted = lock.withLock { values.sorted() }
        guard !sorted.isEmpty else { return (0, 0, 0) }
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.down)))] }
        return (at(0.5), at(0.99), sorted.count)
    }
}

final class ReadyCount: @unchecked Sendable {
    // @unchecked Sendable: under `lock`.
    private let lock = NSLock()
    private var ready = 0
    private var failures = 0
    var count: Int { lock.withLock { ready } }
    var failed: Int { lock.withLock { failures } }
    func add() { lock.withLock { ready += 1 } }
    func fail() { lock.withLock { failures += 1 } }
}

final class StopFlag: @unchecked Sendable {
    // @unchecked Sendable: under `lock`.
    private let lock = NSLock()
    private var flag = false
    var stopped: Bool { lock.withLock { flag } }
    func stop() { lock.withLock { flag = true } }
}

final class Counter: @unchecked Sendable {
    // @unchecked Sendable: under `lock`.
    private let lock = NSLock()
    private var total = 0
    var value: Int { lock.withLock { total } }
    func add(_ n: Int) { lock.withLock { total += n } }
}

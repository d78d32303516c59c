import ArgumentParser
import Foundation
import StrataPQ
import StrataServer
import StrataWire

/// `strata-server bench`: one service instance (a child process) and virtual devices in
/// this process (connections of their own, speaking the API as a device's transport does;
/// not whole sims), against a PostgreSQL server. See BenchRun for the phases.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench", abstract: "Measure one instance with many virtual devices.")

    @Option(help: "The PostgreSQL server the instance uses (a test database: the bench adds members and operations).")
    var database: String

    @Option(parsing: .unconditional, help: "Virtual devices, each live-pulling its document.")
    var devices = 1000

    @Option(parsing: .unconditional, help: "Documents the devices are spread over.")
    var documents = 100

    @Option(parsing: .unconditional, help: "Devices that also push one operation a second (at most --devices).")
    var pushers = 1000

    @Option(parsing: .unconditional, help: "Seconds of the one-a-second pushes (the commit → applied latency).")
    var seconds = 10

    @Option(name: .customLong("push-seconds"), parsing: .unconditional, help: "Seconds of pushing as fast as possible (the throughput).")
    var pushSeconds = 5

    @Option(name: .customLong("failover-seconds"), parsing: .unconditional,
            help: "Seconds of the two-instance run (one SIGKILLed half-way); 0 leaves it out.")
    var failoverSeconds = 10

    @Option(name: .customLong("failover-devices"), parsing: .unconditional, help: "Devices of the two-instance run (each pushing every 100 ms).")
    var failoverDevices = 100

    @Option(name: .customLong("pool-size"), parsing: .unconditional, help: "The instance's [database] pool_size.")
    var poolSize = 10

    @Flag(help: "Print the report as JSON.")
    var json = false

    func run() async throws {
        guard devices >= 1, devices <= 100_000, documents >= 1, documents <= devices, pushers >= 0, seconds >= 1, pushSeconds >= 1,
              poolSize >= 1, failoverSeconds >= 0, failoverSeconds <= 3600, failoverDevices >= 2, failoverDevices <= 10_000 else {
            throw ValidationError("--devices 1…100000, --documents 1…devices, --seconds and --push-seconds at least 1, --pool-size at least 1, --failover-seconds 0…3600, --failover-devices 2…10000")
        }
        var run = try BenchRun(database: database, devices: devices, documents: documents, pushers: min(pushers, devices),
                               seconds: seconds, pushSeconds: pushSeconds, poolSize: poolSize, failoverSeconds: failoverSeconds,
                               failoverDevices: failoverDevices, say: json ? { _ in } : { print($0) })
        let report = try await run.run()
        if json {
            let data = try JSONSerialization.data(withJSONObject: report.json, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(report.table)
        }
    }
}

import ArgumentParser
import Foundation
import Logging
import Strata

struct PowerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "power",
        abstract: "Show the power state as read now, its source, and the intervals the flush policy would choose.")

    @Option(help: "The TOML config file (defaults apply when it is absent and not given).")
    var config: String?

    @Flag(help: "Print JSON (a stable interface for scripts).")
    var json = false

    @Flag(help: "Keep running and print again on every change (one JSON object per line with --json).")
    var watch = false

    @Option(name: .customLong("poll-interval"), help: "With --watch: seconds between reads besides change signals.")
    var pollInterval: Double?

    func validate() throws {
        if let pollInterval, !(pollInterval > 0 && pollInterval <= 86_400) {
            throw ValidationError("--poll-interval must be a positive number of seconds, at most a day")
        }
    }

    func run() throws {
        var config = try loadConfig(config, command: "power")
        if let pollInterval { config.persistence.power.pollInterval = .nanoseconds(Int64(pollInterval * 1e9)) }
        let policy = FlushPolicy(config: config.persistence)
        guard watch else {
            try emit(PowerReport(reading: .readNow(config: config.persistence.power), policy: policy))
            return
        }
        bootstrapLogging(level: .error)
        let monitor = PowerMonitor(config: config.persistence.power, logger: Logger(label: "strata.power"))
        let signals = SignalFlags()
        monitor.start()
        var printed = -1
        while signals.stopSignal == nil {
            let count = monitor.changeCount
            if count != printed, count > 0 || config.persistence.power.source == .fallback {
                try emit(PowerReport(reading: monitor.latest, policy: policy))
                printed = count
            }
            usleep(20_000)
        }
        monitor.stop()
    }

    private func emit(_ report: PowerReport) throws {
        // Written straight to the descriptor: a watcher reading the pipe sees each line at once.
        let text = (json ? try report.json(pretty: !watch) : report.text + (watch ? "\n" : "")) + "\n"
        writeAll(STDOUT_FILENO, text)
    }
}

/// Loads `path` (or ./config.toml if present, else the defaults), exiting 1 with the error.
func loadConfig(_ path: String?, command: String) throws -> StrataConfig {
    let file = path ?? "config.toml"
    guard path != nil || FileManager.default.fileExists(atPath: file) else { return StrataConfig() }
    do {
        return try StrataConfig.load(path: file)
    } catch let error as ConfigError {
        printError("strata \(command): \(error)")
        throw ExitCode.failure
    }
}

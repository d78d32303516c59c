import ArgumentParser
import Foundation
import Logging
import Strata
import StrataCanvas

/// `strata sync status PATH` and `strata sync retry PATH`: a document's outbox.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Show a document's sync outbox, or push its dead letters again.",
        subcommands: [Status.self, Retry.self])

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The outbox (operations the server lacks), the dead letters, the last push, pull and error.",
            discussion: "Reads the file without changing it (a running strata sim may have it open). --json prints the same fields.")

        @Argument(help: "The database file.")
        var path: String

        @Flag(help: "Print JSON (a stable interface for scripts).")
        var json = false

        @Option(help: "The TOML config file, for [sync] max_clock_ahead_secs (defaults apply when it is absent and not given).")
        var config: String?

        func run() throws {
            let status: SyncStatus
            do {
                status = try SyncStatus.read(path: path)
            } catch {
                printError("strata sync status: \(error)")
                throw ExitCode.failure
            }
            // What the log holds about conflicts: a report of its own, never a reason to fail.
            let limit = try loadConfig(config, command: "sync status").sync.maxClockAhead
            let conflicts = try? OperationLogReader(path: path).conflicts(now: Int64(Date().timeIntervalSince1970 * 1000), maxAheadMilliseconds: Int64(limit.milliseconds))
            if json {
                var object = try JSONSerialization.jsonObject(with: jsonEncoder().encode(status)) as? [String: Any] ?? [:]
                object["outbox"] = status.outboxCount
                if let conflicts { object["conflicts"] = try JSONSerialization.jsonObject(with: jsonEncoder().encode(conflicts)) }
                say(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self))
                return
            }
            let time = { (ms: Int64?) in ms.map { Date(timeIntervalSince1970: Double($0) / 1000).description } ?? "never" }
            say("server        \(status.server.isEmpty ? "never synced" : status.server)")
            say("outbox        \(status.outboxCount) operations (\(status.pending) not pushed yet, \(status.failing.count) refused and retried, \(status.deadLetters.count) dead letters)")
            say("pushed        through sequence \(status.pushedThrough); last push \(time(status.lastPushAt))")
            say("pulled        last pull \(time(status.lastPullAt))"
                + (status.receivedOperations.map { "; \($0) operations of other devices in the log" } ?? ""))
            if let error = status.lastError { say("last error    \(error) (\(time(status.lastErrorAt)))") }
            for failure in status.failing + status.deadLetters {
                say("  #\(failure.sequence) \(failure.deadAt == nil ? "refused" : "DEAD LETTER") after \(failure.attempts) attempts: \(failure.lastError)")
            }
            if let conflicts {
                say("conflicts     \(conflicts.overwrites.total == 0 ? "no" : conflicts.overwrites.description) overwrites between devices "
                    + "in the log's \(conflicts.operations) replicated values; \(conflicts.defaultsReplaced) defaults replaced by a value a device wrote")
                let ahead = conflicts.furthestAheadMilliseconds.map { ", the furthest \($0 / 1000) s ahead" } ?? ""
                say("held back     \(conflicts.aheadOfClock) stamped more than max_clock_ahead_secs (\(Int(limit.seconds))) ahead of this clock\(ahead); "
                    + "\(conflicts.unknownType) of a type this document does not replicate")
            }
        }
    }

    struct Retry: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the dead letters ordinary outbox entries again: pushed at the next sync.",
            discussion: "Opens the document (it must not be open elsewhere).")

        @Argument(help: "The database file.")
        var path: String

        @Option(help: "The TOML config file (defaults apply when it is absent and not given).")
        var config: String?

        func run() throws {
            var config = try loadConfig(self.config, command: "sync retry")
            config.database.path = path
            do {
                let engine = try Engine.open(config: config, components: canvasComponents,
                                             logger: Logger(label: "strata", factory: { _ in SwiftLogNoOpLogHandler() }),
                                             options: .forTools)
                let count = try engine.retrySyncDeadLetters()
                try engine.shutdown()
                say("strata sync retry: \(count) dead letters back in the outbox")
            } catch {
                printError("strata sync retry: \(error)")
                throw ExitCode.failure
            }
        }
    }
}

import ArgumentParser
import Foundation
import Strata

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Report a database's journal mode, schema, WAL, contents and session marks.")

    @Argument(help: "The database file.")
    var path: String

    @Flag(help: "Print JSON (a stable interface for scripts).")
    var json = false

    @Option(parsing: .unconditional, help: "The world as of this time in the history window: ISO 8601, or relative to now (-30s, -5m, -2h).")
    var at: String?

    func run() throws {
        if let at {
            do {
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                let snapshot = try DocumentHistory.snapshot(path: path, at: try HistoryTime.parse(at, now: now), now: now)
                if json {
                    try sayJSON(snapshot)
                } else {
                    say("at               \(HistoryCommand.time(snapshot.atMilliseconds))"
                        + (snapshot.flushMilliseconds.map { " (the flush of \(HistoryCommand.time($0)))" } ?? ""))
                    say("entities         \(snapshot.entityCount)")
                    for (type, count) in snapshot.components.sorted(by: { $0.key < $1.key }) {
                        say("  \(type.padding(toLength: 28, withPad: " ", startingAt: 0)) \(count)")
                    }
                    say("digest           \(snapshot.digest.replicated) replicated; per type "
                        + snapshot.digest.types.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
                }
            } catch {
                printError("strata inspect: \(error)")
                throw ExitCode.failure
            }
            return
        }
        do {
            let inspection = try DatabaseInspection.inspect(path: path)
            print(json ? try inspection.json() : inspection.text)
        } catch let error as StoreError {
            printError("strata inspect: \(error)")
            throw ExitCode.failure
        }
    }
}

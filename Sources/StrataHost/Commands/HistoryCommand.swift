import ArgumentParser
import Foundation
import Strata

/// `strata history PATH [--json]`: the flushes a document keeps in its history window.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "List the flushes in a document's history window ([history] keep_secs).",
        discussion: """
            Reads the document without changing it, even while an engine has it open: where the \
            window starts (the world can be rebuilt at any time from there to now: strata inspect \
            PATH --at TIME, Engine.world(at:)), its size, and each flush that changed the world: \
            its time, why it was flushed, the values written, the entities spawned and despawned.
            """)

    @Argument(help: "The database file.")
    var path: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let window: HistoryWindow?
        do {
            window = try DocumentHistory.window(path: path)
        } catch {
            printError("strata history: \(error)")
            throw ExitCode.failure
        }
        guard let window else {
            printError("strata history: \(path) keeps no history ([history] keep_secs is 0, or nothing was flushed since)")
            throw ExitCode.failure
        }
        if json {
            try sayJSON(window)
            return
        }
        say("window  \(Self.time(window.startMilliseconds)) … \(Self.time(window.endMilliseconds)), "
            + "\(window.flushes.count) flushes, \(window.bytes) bytes kept")
        for flush in window.flushes {
            say("  \(Self.time(flush.atMilliseconds))  \(flush.keys) values, \(flush.spawns) spawned, \(flush.despawns) despawned "
                + "(\(flush.reasons.joined(separator: ", ")))")
        }
    }

    static func time(_ milliseconds: Int64) -> String { HistoryError.format(milliseconds) }
}

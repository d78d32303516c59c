import ArgumentParser
import Foundation

/// `strata-server`: the sync service, and the tools to run it.
@main
struct StrataServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-server",
        abstract: "Strata's sync service: devices push and pull operations over HTTP, with tokens and per-document access.",
        subcommands: [ServeCommand.self, TokenCommand.self, MembersCommand.self, BenchCommand.self]
    )
}

/// Says `message` on standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

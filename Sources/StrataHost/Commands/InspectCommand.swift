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

    func run() throws {
        do {
            let inspection = try DatabaseInspection.inspect(path: path)
            print(json ? try inspection.json() : inspection.text)
        } catch let error as StoreError {
            printError("strata inspect: \(error)")
            throw ExitCode.failure
        }
    }
}

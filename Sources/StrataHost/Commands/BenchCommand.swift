import ArgumentParser
import Foundation
import StrataBench

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run the fsync benchmark: the same workload persisted by each strategy, side by side.",
        discussion: "Writes NAME.json, NAME.svg and NAME.md into --out, and prints a table. Use a release build for timings.")

    @Option(help: "Entities in the world (N).")
    var entities = 1000

    @Option(help: "Entities moving every tick (M).")
    var moving = 1000

    @Option(help: "Simulated seconds per strategy (S).")
    var seconds = 6.0

    @Option(help: "Comma-separated strategies (\(BenchRunner.strategyNames.joined(separator: ", "))).")
    var strategies = BenchRunner.strategyNames.joined(separator: ",")

    @Option(name: .customLong("snapshot-secs"), help: "Seconds between snapshots of the snapshot strategy (K).")
    var snapshotSecs = 5.0

    @Flag(name: .customLong("no-scaling-check"), help: "Skip the extra Strata run at N/10, M/10.")
    var noScalingCheck = false

    @Option(help: "Folder for the results and the report.")
    var out = "bench-results"

    @Option(help: "Base name of the files written.")
    var name = "report"

    @Flag(help: "Print the JSON results instead of the table.")
    var json = false

    func validate() throws {
        if entities < 1 || moving < 0 || moving > entities { throw ValidationError("need 1 ≤ entities and 0 ≤ moving ≤ entities") }
        if !(seconds > 0) { throw ValidationError("--seconds must be positive") }
    }

    func run() throws {
        var options = BenchOptions()
        options.entities = entities
        options.moving = moving
        options.seconds = seconds
        options.snapshotEverySecs = snapshotSecs
        options.strategies = strategies.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        options.scalingCheck = !noScalingCheck
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(at: work) }
        let command = (["strata"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
        let results: BenchResults
        do {
            results = try BenchRunner.run(options, directory: work, command: command) { line in
                if !json { printError(line) }
            }
        } catch let error as BenchRunner.BenchError {
            printError("strata bench: \(error)")
            throw ExitCode.failure
        }
        let files = try BenchReport.write(results, to: URL(fileURLWithPath: out), name: name)
        if json {
            say(try BenchReport.json(results))
        } else {
            say(BenchReport.table(results))
            say("")
            for check in BenchReport.checks(results) {
                say("\(check.met == true ? "met    " : "NOT MET") \(check.claim): \(check.measured)")
            }
            say("\nwrote \(files.joined(separator: ", "))")
        }
    }
}

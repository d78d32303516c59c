import ArgumentParser
import Foundation
import Strata
import StrataBench

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run the fsync benchmark: the same workload persisted by each strategy, side by side.",
        discussion: """
            Writes NAME.json, NAME.svg and NAME.md into --out, and prints a table. Use a release build for timings. \
            With --sweep-entities, runs every strategy (default: \(BenchRunner.sweepStrategies.joined(separator: ", "))) \
            at each world size instead, with --moving entities moving, and reports bytes/s and tick p99 against N. \
            With --repeat K, runs only the baseline, Strata and the twin (the baseline's work on a second world) in one \
            tick loop, K times at each size (--sweep-entities, or --entities), and reports the spread of the tick-p99 ratios. \
            With --workload canvas, runs the canvas `strata sim` draws instead (every kind of data: components, entity rows, \
            the operation log, jobs with thumbnails, a second device's operations), with --entities shapes or at each size of \
            --sweep-entities, beside snapshots of the same canvas (\(BenchRunner.canvasStrategies.joined(separator: ", "))), \
            and reports pages per commit by table; writes NAME canvas by default.
            """)

    @Option(help: "The workload: components (N entities, M moving, a label edit a second) or canvas (strata sim's canvas of N shapes).")
    var workload = "components"

    @Option(help: "Entities in the world (N).")
    var entities = 1000

    @Option(help: "Entities moving every tick (M).")
    var moving = 1000

    @Option(help: "Simulated seconds per strategy (S).")
    var seconds = 6.0

    @Option(help: "Comma-separated strategies (\(BenchRunner.strategyNames.joined(separator: ", ")), twin, or snapshot-<K>s).")
    var strategies: String?

    @Option(name: .customLong("sweep-entities"), help: "Comma-separated world sizes: run every strategy at each (e.g. 1000,10000,100000,1000000).")
    var sweepEntities: String?

    @Option(help: "Run the tick-p99 comparison (baseline, Strata, twin) this many times at each size instead (writes NAME p99 by default).")
    var `repeat`: Int?

    @Option(name: .customLong("page-size"), help: "Strata's database.page_size (default: the config's).")
    var pageSize: Int?

    @Option(name: .customLong("auto-vacuum"), help: "Strata's database.auto_vacuum: incremental or none (default: the config's).")
    var autoVacuum: String?

    @Option(name: .customLong("history-secs"), help: "Strata keeps a history window this long ([history] keep_secs); the sweep says what it keeps a second.")
    var historySecs: Double?

    @Option(name: .customLong("compaction-backlog-kb"), help: "Strata's compaction.backlog_mb, in KB (default: the config's; 64 with --sweep-entities, so that compaction runs at least twice in 60 s at every size).")
    var compactionBacklogKB: Double?

    @Option(name: .customLong("compaction-method"), help: "Strata compacts with this method only: merge or fold (default: the cheaper).")
    var compactionMethod: String?

    @Option(help: "The components workload's transforms declare this precision: their floats are stored in its steps (PayloadWriter.write(_:precision:)), every strategy alike.")
    var precision: Float?

    @Option(help: "How the components workload's movers move: linear (x by half a unit a tick, floats on a grid) or smooth (round circles, floats of every bit pattern).")
    var motion = "linear"

    @Option(name: .customLong("snapshot-secs"), help: "Seconds between snapshots of the snapshot strategy (K).")
    var snapshotSecs = 5.0

    @Flag(name: .customLong("no-scaling-check"), help: "Skip the extra Strata run at N/10, M/10 (with --workload canvas: the busy and battery runs).")
    var noScalingCheck = false

    @Option(help: "Folder for the results and the report.")
    var out = "bench-results"

    @Option(help: "Base name of the files written (default: report, or sweep with --sweep-entities).")
    var name: String?

    @Flag(help: "Print the JSON results instead of the table.")
    var json = false

    func validate() throws {
        if !["components", "canvas"].contains(workload) { throw ValidationError("--workload must be components or canvas") }
        if workload == "canvas", `repeat` != nil { throw ValidationError("--repeat runs the components workload; leave out --workload canvas") }
        if entities < 1 || moving < 0 || moving > entities { throw ValidationError("need 1 ≤ entities and 0 ≤ moving ≤ entities") }
        // Every number is checked before a conversion could trap on it (1e300 did).
        if !(seconds > 0 && seconds <= 30 * 86_400) { throw ValidationError("--seconds must be positive, at most 30 days") }
        if !(snapshotSecs > 0 && snapshotSecs <= 86_400) { throw ValidationError("--snapshot-secs must be positive, at most a day") }
        if let pageSize, !(512 ... 65536).contains(pageSize) || pageSize & (pageSize - 1) != 0 {
            throw ValidationError("--page-size must be a power of two between 512 and 65536")
        }
        if let autoVacuum, AutoVacuum(rawValue: autoVacuum) == nil {
            throw ValidationError("--auto-vacuum must be one of: \(AutoVacuum.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let compactionBacklogKB, !(compactionBacklogKB > 0 && compactionBacklogKB <= 64 * 1024 * 1024) {
            throw ValidationError("--compaction-backlog-kb must be positive, at most 64 GB")
        }
        if let historySecs, !(historySecs > 0 && historySecs <= 30 * 86_400) { throw ValidationError("--history-secs must be a positive number of seconds, at most 30 days") }
        if let precision, !(precision.isFinite && precision > 0) { throw ValidationError("--precision must be a positive number, such as 0.01") }
        if !["linear", "smooth"].contains(motion) { throw ValidationError("--motion must be linear or smooth") }
        if motion != "linear", workload == "canvas" { throw ValidationError("--motion applies to the components workload; leave out --workload canvas") }
        if precision != nil, workload == "canvas" { throw ValidationError("--precision applies to the components workload; leave out --workload canvas") }
        if let `repeat`, `repeat` < 1 { throw ValidationError("--repeat must be at least 1") }
        if `repeat` != nil, strategies != nil { throw ValidationError("--repeat runs the baseline, Strata and the twin; leave out --strategies") }
        if let sweepEntities, sizes(sweepEntities) == nil {
            throw ValidationError("--sweep-entities must be a comma-separated list of sizes of at least 1, such as 1000,10000")
        }
    }

    private func sizes(_ list: String) -> [Int]? {
        let sizes = list.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !sizes.isEmpty, sizes.allSatisfy({ ($0 ?? 0) >= 1 }) else { return nil }
        return sizes.compactMap { $0 }
    }

    func run() throws {
        BenchRunner.storeTransforms(precision: precision, smooth: motion == "smooth")
        var options = BenchOptions()
        options.entities = entities
        options.moving = moving
        options.seconds = seconds
        options.snapshotEverySecs = snapshotSecs
        let sweep = sweepEntities.flatMap(sizes)
        options.strategies = (strategies ?? (sweep == nil ? BenchRunner.strategyNames : BenchRunner.sweepStrategies).joined(separator: ","))
            .split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        options.scalingCheck = !noScalingCheck
        options.strataPageSize = pageSize
        options.strataAutoVacuum = autoVacuum
        options.strataBacklogBytes = (compactionBacklogKB ?? (sweep == nil ? nil : 64)).map { Int($0 * 1024) }
        options.strataHistory = historySecs.map { .milliseconds(Int64($0 * 1000)) }
        options.strataCompactionMethod = compactionMethod
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(at: work) }
        let command = (["strata"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
        if workload == "canvas" {
            options.strategies = (strategies ?? BenchRunner.canvasStrategies.joined(separator: ","))
                .split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            options.canvasExtras = !noScalingCheck
            let results = try running { try BenchRunner.canvasSweep(options, sizes: sweep ?? [entities], directory: work, command: command, progress: $0) }
            let files = try BenchReport.writeCanvas(results, to: URL(fileURLWithPath: out), name: name ?? "canvas")
            report(json: try BenchReport.json(results), table: BenchReport.canvasTable(results), checks: BenchReport.canvasChecks(results), files: files)
            return
        }
        if let runs = `repeat` {
            try runStudy(options, sizes: sweep ?? [entities], runs: runs, work: work, command: command)
            return
        }
        if let sweep {
            try runSweep(options, sizes: sweep, work: work, command: command)
            return
        }
        let results = try running { try BenchRunner.run(options, directory: work, command: command, progress: $0) }
        let files = try BenchReport.write(results, to: URL(fileURLWithPath: out), name: name ?? "report")
        report(json: try BenchReport.json(results), table: BenchReport.table(results), checks: BenchReport.checks(results), files: files)
    }

    /// Runs `body` with progress on standard error (unless --json); a BenchError is a clear failure.
    private func running<R>(_ body: (_ progress: (String) -> Void) throws -> R) throws -> R {
        do {
            return try body { line in if !json { printError(line) } }
        } catch let error as BenchRunner.BenchError {
            printError("strata bench: \(error)")
            throw ExitCode.failure
        }
    }

    private func report(json text: String, table: String, checks: [BenchReport.Check], files: [String]) {
        guard !json else { return say(text) }
        say(table)
        say("")
        for line in BenchReport.checkLines(checks) { say(line) }
        say("\nwrote \(files.joined(separator: ", "))")
    }

    private func runStudy(_ options: BenchOptions, sizes: [Int], runs: Int, work: URL, command: String) throws {
        let study = try running { try BenchRunner.p99Study(options, sizes: sizes, runs: runs, directory: work, command: command, progress: $0) }
        let files = try BenchReport.write(study, to: URL(fileURLWithPath: out), name: name ?? "p99")
        report(json: try BenchReport.json(study), table: BenchReport.p99StudyTable(study), checks: BenchReport.p99StudyChecks(study), files: files)
    }

    private func runSweep(_ options: BenchOptions, sizes: [Int], work: URL, command: String) throws {
        let results = try running { try BenchRunner.sweep(options, sizes: sizes, directory: work, command: command, progress: $0) }
        let files = try BenchReport.write(results, to: URL(fileURLWithPath: out), name: name ?? "sweep")
        report(json: try BenchReport.json(results), table: BenchReport.sweepTable(results), checks: BenchReport.sweepChecks(results), files: files)
    }
}

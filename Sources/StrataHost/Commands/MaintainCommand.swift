import ArgumentParser
import Foundation
import Logging
import Strata

/// `strata maintain PATH [--vacuum] [--json]`: the engine's maintenance, now.
struct MaintainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "maintain",
        abstract: "Compact the segment log, apply retention, return free pages and refresh statistics, now.",
        discussion: """
            Opens the document as an engine would (it must not be open elsewhere), folds the segment \
            log, runs a maintenance round whatever the power ([maintenance] and [jobs] retention from \
            the config), and shuts down cleanly. --vacuum then rewrites the file once with \
            auto_vacuum=INCREMENTAL (a full VACUUM: files made before Strata set it). A damaged file \
            is refused and left as it is, unless --repair: then it is set aside, what still reads is \
            salvaged into a new file, and the report says what could not be.
            """)

    @Argument(help: "The database file.")
    var path: String

    @Option(help: "The TOML config (default: config.toml if present; its database path is ignored).")
    var config: String?

    @Flag(help: "Also rewrite the file with a full VACUUM (converts it to auto_vacuum=INCREMENTAL).")
    var vacuum = false

    @Flag(help: "A damaged file is set aside and salvaged into a new one (without it, a damaged file is refused).")
    var repair = false

    @Flag(help: "Print JSON.")
    var json = false

    struct Result: Codable {
        var path: String
        var bytesBefore: Int
        var bytesAfter: Int
        var compactionRounds: Int
        var retentionRowsDeleted: Int
        var pagesVacuumed: Int
        var optimizeRuns: Int
        var vacuum: Store.VacuumResult?
    }

    func run() throws {
        var settings = try loadConfig(config, command: "maintain")
        settings.database.path = path
        settings.metrics.exportInterval = .zero
        // A repair cut short may have left no file under the name, and its marker: --repair finishes it.
        let repairing = repair && FileManager.default.fileExists(atPath: StoreLocation(path: path).repairMarkerPath)
        guard FileManager.default.fileExists(atPath: path) || repairing else {
            printError("strata maintain: \(path): no such file\(FileManager.default.fileExists(atPath: StoreLocation(path: path).repairMarkerPath) ? " (a repair of it was cut short: --repair finishes it)" : "")")
            throw ExitCode.failure
        }
        let sizeBefore = Self.fileBytes(path)
        var options = Engine.Options.forTools
        options.replaceIfCorrupt = repair
        var logger = Logger(label: "strata")
        logger.logLevel = .warning
        var result: Result
        do {
            // No component types: every row is kept as it is (compaction folds unknown types byte for byte).
            let engine = try Engine.open(config: settings, logger: logger, options: options)
            if let setAside = engine.recovery.setAsideCorruptFile {
                say("strata maintain: \(path) was damaged: set aside as \(setAside); a new file holds what still read")
                for line in engine.recovery.description.split(separator: "\n") { say("  \(line)") }
            }
            let compacted = engine.compactNow(timeout: .seconds(3600))
            let maintained = engine.maintainNow(timeout: .seconds(3600))
            let metrics = engine.metrics
            try engine.shutdown()
            guard compacted, maintained else {
                printError("strata maintain: \(compacted ? "the maintenance round" : "compaction") did not finish (see the warnings above)")
                throw ExitCode.failure
            }
            result = Result(path: path, bytesBefore: sizeBefore, bytesAfter: Self.fileBytes(path),
                            compactionRounds: metrics.compactionRounds, retentionRowsDeleted: metrics.retentionRowsDeleted,
                            pagesVacuumed: metrics.pagesVacuumed, optimizeRuns: metrics.optimizeRuns)
            if vacuum {
                result.vacuum = try Store.vacuum(path: path)
                result.bytesAfter = Self.fileBytes(path)
            }
        } catch let error as StoreError {
            printError("strata maintain: \(error)")
            throw ExitCode.failure
        }
        if json {
            try sayJSON(result)
            return
        }
        say("\(path): \(result.bytesBefore) → \(result.bytesAfter) bytes")
        say("  compaction rounds \(result.compactionRounds), retention deleted \(result.retentionRowsDeleted) rows, " +
            "\(result.pagesVacuumed) free pages returned, PRAGMA optimize \(result.optimizeRuns)×")
        if let vacuum = result.vacuum {
            say("  VACUUM: \(vacuum.bytesBefore) → \(vacuum.bytesAfter) bytes, auto_vacuum \(vacuum.autoVacuumBefore) → \(vacuum.autoVacuumAfter)")
        }
    }

    /// The main file's size on disk (the WAL is truncated at a clean shutdown).
    static func fileBytes(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}

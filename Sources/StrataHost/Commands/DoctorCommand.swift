import ArgumentParser
import Foundation
import Strata

/// `strata doctor PATH [--json]`: what is wrong with a document, and what to do about it.
struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a document: integrity, free pages, WAL, table sizes, segments, outbox, jobs; a recommendation per finding.",
        discussion: """
            Reads the file without changing it (a running engine may have it open). Exits 0 when \
            nothing is worse than info, 1 on a warning, 2 on an error. --json prints the same fields.
            """)

    @Argument(help: "The database file.")
    var path: String

    @Option(help: "The TOML config whose [maintenance] size_warning_mb judges the size (default: config.toml if present).")
    var config: String?

    @Flag(help: "Print JSON (a stable interface for scripts).")
    var json = false

    @Option(name: .customLong("export-set-aside"),
            help: "Write the segment rows compaction could not read and set aside into this folder (segment-ID.records and .json), then exit.")
    var exportSetAside: String?

    func run() throws {
        if let exportSetAside {
            do {
                let entries = try SetAsideSegments.export(path: path, to: exportSetAside)
                say("strata doctor: \(entries.count) set-aside segment rows written to \(exportSetAside)")
                for entry in entries { say("  segment-\(entry.id): \(entry.bytes) bytes, \(entry.recordCount) records: \(entry.reason)") }
                return
            } catch {
                printError("strata doctor: \(error)")
                throw ExitCode(3)
            }
        }
        let settings = try loadConfig(config, command: "doctor")
        let report: DoctorReport
        do {
            report = try DoctorReport.examine(path: path, sizeWarningBytes: settings.maintenance.sizeWarningBytes)
        } catch {
            printError("strata doctor: \(error)")
            throw ExitCode(3)
        }
        if json {
            try sayJSON(report)
        } else {
            say(report.text)
        }
        switch report.worst {
        case .info: return
        case .warning: throw ExitCode(1)
        case .error: throw ExitCode(2)
        }
    }
}

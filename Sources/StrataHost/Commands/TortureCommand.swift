import ArgumentParser
import Foundation
import Logging
import Strata

/// `strata torture`: proves the durability contract under faults (docs/durability.md).
struct TortureCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "torture",
        abstract: "Run the canvas through power cuts, kills or I/O errors, and check the durability contract after each.",
        discussion: """
            drop and torn cut the power at a random moment (a fault-injecting VFS, in this process): \
            unsynced writes are lost, or kept whole, lost or torn at 512-byte sectors. sigkill kills a \
            `strata sim` child. eio and enospc fail every I/O call site the workload reaches, once and \
            from then on; corrupt fails every read with SQLITE_CORRUPT (the file is replaced while running); \
            diskfull runs `strata sim` on a tmpfs a filler has all but filled, freed mid-run or never (root); \
            pages damages each page of a 2000-shape canvas in turn (--cycles: that many, evenly) and starts on it twice; \
            rowtypes plants NULL, an integer, a real, a text, a blob, an empty and a 1 MB value in each column of each \
            table in turn and runs inspect, doctor, oplog, history, backup, a start (one syncing, with --sync-server) and \
            maintain on it: none may trap or hang, and the start loads the rest. sync runs 3-5 `strata sim --sync` devices \
            in network namespaces through a private PostgreSQL server (root): partitions, kills, power cuts, the server \
            stopped hard, clock jumps (the engine's wall clock moved), late joiners; after it heals, every device must hold the server's \
            operations once, the replicated digest the checker works out from them, and every operation logged before \
            the critical delay (--cycles: runs). After each fault the document is reopened and checked: integrity, no orphaned \
            component, every critical change older than its delay plus 250 ms present, derived changes \
            within their bound, the crash counted, the next session running. Exits 1 on any failure, \
            keeping the failing files in --dir.
            """)

    enum Mode: String, CaseIterable {
        case drop, torn, sigkill, eio, enospc, corrupt, diskfull, pages, rowtypes, sync
    }

    @Option(help: "Comma-separated: drop, torn, sigkill, eio, enospc, corrupt, diskfull, pages, rowtypes, sync.")
    var mode: String

    @Option(parsing: .unconditional, help: "Cycles per mode (drop, torn, sigkill, diskfull, pages, rowtypes); for eio/enospc/corrupt the most sites walked per method (default: all).")
    var cycles: Int?

    @Option(parsing: .unconditional, help: "Seed of the cycles' random choices (default: from the time).")
    var seed: UInt64?

    @Option(name: .customLong("sync-server"), help: "A PostgreSQL server (libpq URL) for the row-type sweep's start with sync (without it, that start is left out).")
    var syncServer: String?

    @Option(name: .customLong("sync-service"),
            help: "sync: a strata-server executable the devices sync through (HTTPS, a token each), killed and restarted among the faults; without it they sync straight to PostgreSQL.")
    var syncService: String?

    @Option(name: .customLong("fault-seconds"), parsing: .unconditional, help: "sync: seconds of faults per run.")
    var faultSeconds = 6.0

    @Option(help: "Where the documents, traces and failing files go (default: a new temporary folder).")
    var dir: String?

    @Flag(help: "Print the results as JSON.")
    var json = false

    @Flag(name: .customLong("weaken-durability"),
          help: ArgumentHelp("Commit critical batches without a sync (critical_durability = \"crash\"): power cuts must then fail the check.", visibility: .hidden))
    var weakenDurability = false

    @Flag(name: .customLong("sabotage-sync"),
          help: ArgumentHelp("sync: delete an operation from the server before each check (and through the service, mark one as another subject's): the check must then fail.", visibility: .hidden))
    var sabotageSync = false

    func validate() throws {
        guard !modes.isEmpty, modes.count == mode.split(separator: ",").count else {
            throw ValidationError("--mode takes drop, torn, sigkill, eio, enospc, corrupt, diskfull, pages, rowtypes or sync (comma-separated), got '\(mode)'")
        }
        if let cycles, cycles < 1 { throw ValidationError("--cycles must be at least 1") }
        if !(faultSeconds >= 0.5 && faultSeconds <= 3600) { throw ValidationError("--fault-seconds must be between 0.5 and 3600") }
    }

    private var modes: [Mode] {
        mode.split(separator: ",").compactMap { Mode(rawValue: $0.trimmingCharacters(in: .whitespaces)) }
    }

    func run() throws {
        bootstrapLogging(level: .critical)
        let seed = self.seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        let root = URL(fileURLWithPath: dir ?? NSTemporaryDirectory() + "strata-torture-\(getpid())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var results: [TortureResult] = []
        let interactive = isatty(STDERR_FILENO) == 1
        for mode in modes {
            let folder = root.appendingPathComponent(mode.rawValue)
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var config = TortureSetup.config(databasePath: folder.appendingPathComponent("torture.db").path)
            if weakenDurability { config.persistence.criticalDurability = .crash }
            let setup = TortureSetup(directory: folder, config: config, seed: seed, logger: Logger(label: "strata.torture"))
            let progress = { (cycle: Int, result: TortureResult) in
                if interactive {
                    writeAll(STDERR_FILENO, "\r\(mode.rawValue): \(cycle) cycles, \(result.failureCount) failures   ")
                }
            }
            let result: TortureResult = switch mode {
            case .drop: try PowerCutTorture(setup: setup, mode: .drop, cycles: cycles ?? 100).run(progress: progress)
            case .torn: try PowerCutTorture(setup: setup, mode: .torn, cycles: cycles ?? 100).run(progress: progress)
            case .sigkill: try KillTorture(setup: setup, cycles: cycles ?? 100).run(progress: progress)
            case .diskfull: try DiskFullTorture(setup: setup, cycles: cycles ?? 20).run(progress: progress)
            case .pages: try PageSweepTorture(setup: setup, cycles: cycles ?? Int.max).run(progress: progress)
            case .rowtypes: try RowTypeSweepTorture(setup: setup, cycles: cycles ?? Int.max, syncServer: syncServer).run(progress: progress)
            case .sync: try SyncTorture(setup: setup, runs: cycles ?? 20, faultSeconds: faultSeconds, sabotage: sabotageSync,
                                            service: syncService).run(progress: progress)
            case .eio, .enospc, .corrupt: try IOFaultTorture(setup: setup, mode: mode.rawValue, maxSites: cycles).run(progress: progress)
            }
            if interactive { writeAll(STDERR_FILENO, "\r\u{1B}[K") }
            results.append(result)
        }

        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            say(String(decoding: try encoder.encode(results), as: UTF8.self))
        } else {
            say(TortureResult.table(results))
            for result in results where result.failureCount > 0 {
                say("\n\(result.mode): \(result.failureCount) failures (seed \(result.seed)); files kept in \(result.keptFiles.joined(separator: ", "))")
                for failure in result.failures.prefix(10) { say("  \(failure)") }
            }
            say("\nseed \(seed); documents in \(root.path)")
        }
        if results.contains(where: { $0.failureCount > 0 }) { throw ExitCode.failure }
        if dir == nil { try? FileManager.default.removeItem(at: root) }
    }
}

import Foundation
import GRDB
import Strata

/// `strata torture --mode rowtypes`: the row-type sweep, beside the page sweep. SQLite's
/// columns take a value of any type, and damage or another tool can put one there: every
/// value the engine reads from a row goes through a throwing decode (`Row+Values.swift`).
///
/// A canvas document of 200 shapes is made once (`strata sim`). Each case copies it and
/// plants one value in one column of one row (the first) of one table: NULL, an integer at
/// Int64's top, a real, a text, a blob, an empty text, a blob of 1 MB, for every column of
/// every table of the document; a value a constraint refuses (NOT NULL, a
/// primary key that must be an integer) is not planted, and counted as such. Then, each in a
/// process of its own, as a user would run them: `inspect` (text and JSON), `doctor`,
/// `oplog`, `history`, `backup`, a start (`strata sim` for a second), a start syncing to a
/// private server (with `--sync-server`), and `maintain`.
///
/// Each case checks:
/// - no process is ended by a signal (a trap) or runs past its time (a hang);
/// - the start loads the rest: at least every entity but the one whose row took the value.
///
/// A tool may refuse the file (exit 1 or 2, saying why): that is a report, not a failure.
struct RowTypeSweepTorture {
    let setup: TortureSetup
    let cycles: Int
    let syncServer: String?

    static let shapes = 200
    /// The values planted, and how each is written in SQL.
    static let values: [(name: String, sql: String)] = [
        ("NULL", "NULL"), ("an integer", "9223372036854775807"), ("a real", "3.5"), ("a text", "'text'"),
        ("a blob", "x'00ff'"), ("an empty text", "''"), ("a very large blob", "zeroblob(1048576)"),
    ]
    /// The most one tool may take before it counts as hung.
    static let toolTimeout: TimeInterval = 120

    /// One column of one table: where a value is planted.
    struct Column {
        var table: String
        var name: String
        /// The SQL that picks the row (its first): by rowid, or by the primary key of a
        /// table without one.
        var firstRow: String
    }

    struct Case {
        var column: Column
        var value: (name: String, sql: String)
        var label: String { "\(column.table).\(column.name) = \(value.name)" }
    }

    func run(progress: (Int, TortureResult) -> Void) throws -> TortureResult {
        var result = TortureResult(mode: "rowtypes", seed: setup.seed)
        let clock = MonotonicClock()
        let started = clock.now()
        let folder = setup.directory.appendingPathComponent("rowtypes").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let original = folder + "/original.db"
        try makeDocument(at: original)
        let columns = try Self.columns(of: original)
        let entitiesBefore = try Self.entityCount(original)
        var all: [Case] = []
        for column in columns { for value in Self.values { all.append(Case(column: column, value: value)) } }
        let picked = PageSweepTorture.pick(cycles, of: all.count).map { all[$0 - 1] }
        result.details["columns"] = columns.count
        result.details["cases in all"] = all.count

        for (index, trialCase) in picked.enumerated() {
            let cycle = index + 1
            let trialFolder = folder + "/trial"
            try? FileManager.default.removeItem(atPath: trialFolder)
            try FileManager.default.createDirectory(atPath: trialFolder, withIntermediateDirectories: true)
            let trial = trialFolder + "/trial.db"
            try FileManager.default.copyItem(atPath: original, toPath: trial)
            switch Self.plant(trialCase, in: trial) {
            case .planted:
                break
            case .emptyTable:
                result.details["not planted: the table has no row", default: 0] += 1
                result.cycles = cycle
                continue
            case .refused:
                result.details["not planted: a constraint refuses it", default: 0] += 1
                result.cycles = cycle
                continue
            }
            result.faults += 1
            var outcome = ContractCheck.Outcome()
            var runs: [(name: String, arguments: [String])] = [
                ("inspect", ["inspect", trial]), ("inspect --json", ["inspect", "--json", trial]), ("doctor", ["doctor", trial]),
                ("oplog", ["oplog", trial]), ("history", ["history", trial]),
                ("backup", ["backup", trial, trialFolder + "/backup.db"]),
                ("start", ["sim", "--db", trial, "--entities", String(Self.shapes), "--duration", "1", "--log-level", "critical"]),
            ]
            if let syncServer {
                runs.append(("start with sync", ["sim", "--db", trial, "--entities", String(Self.shapes), "--duration", "1",
                                                  "--sync", syncServer, "--sync-document", "rowtypes-\(setup.seed)-\(cycle)",
                                                  "--sync-settle", "0.5", "--log-level", "critical"]))
            }
            runs.append(("maintain", ["maintain", trial]))
            for (name, arguments) in runs {
                outcome.checks += 1
                let run = try Self.runTool(arguments, in: trialFolder)
                if run.timedOut {
                    outcome.fail(.hang, "\(trialCase.label): \(name) ran past \(Int(Self.toolTimeout)) s")
                } else if run.signal != nil {
                    outcome.fail(.trap, "\(trialCase.label): \(name) was ended by signal \(run.signal ?? 0): \(run.stderr.suffix(300))")
                } else {
                    result.details["\(name) exit \(run.status)", default: 0] += 1
                }
                if name == "start", run.signal == nil, !run.timedOut {
                    // The start says what it recovered: the rest loads.
                    outcome.checks += 1
                    if let loaded = Self.recoveredEntities(run.stdout) {
                        if loaded < entitiesBefore - 1 {
                            outcome.fail(.changesLost, "\(trialCase.label): the start recovered \(loaded) entities of \(entitiesBefore)")
                        }
                    } else if run.status == 0 {
                        outcome.fail(.reopen, "\(trialCase.label): the start did not say what it recovered: \(run.stdout.prefix(300))")
                    } else {
                        result.details["start refused the file", default: 0] += 1
                    }
                }
            }
            if result.absorb(outcome, cycle: cycle) {
                let kept = setup.directory.appendingPathComponent("failed-rowtypes-\(cycle)").path
                try? FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true)
                try? FileManager.default.copyItem(atPath: original, toPath: kept + "/original.db")
                try? Data(trialCase.label.utf8).write(to: URL(fileURLWithPath: kept + "/case.txt"))
                result.keptFiles.append(kept)
            }
            result.cycles = cycle
            progress(cycle, result)
        }
        result.seconds = clock.now().duration(since: started).seconds
        return result
    }

    /// The canvas, its strokes, thumbnails and operations, with a history window, synced
    /// (with `--sync-server`: the sync's own tables), made by `strata sim` and shut down
    /// cleanly.
    private func makeDocument(at path: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let config = folder + "/document.toml"
        try "[history]\nkeep_secs = 600\n".write(toFile: config, atomically: true, encoding: .utf8)
        // A first session as `strata sim` runs (jobs, thumbnails, waiting spawns), then one
        // with the history window and, given a server, the sync.
        let session = ["sim", "--db", path, "--entities", String(Self.shapes), "--activity", "5",
                       "--seed", String(setup.seed & 0xFFFF), "--log-level", "critical"]
        var second = session + ["--config", config, "--duration", "2"]
        if let syncServer { second += ["--sync", syncServer, "--sync-document", "rowtypes-\(setup.seed)-original", "--sync-settle", "1"] }
        for arguments in [session + ["--duration", "3"], second] {
            let run = try Self.runTool(arguments, in: folder)
            guard run.status == 0, run.signal == nil else {
                throw TortureError("strata sim could not make the document (status \(run.status)): \(run.stderr.suffix(300))")
            }
        }
    }

    /// Every column of every table of the document (SQLite's own tables aside).
    static func columns(of path: String) throws -> [Column] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var columns: [Column] = []
            let tables = try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            for row in tables {
                guard let table = row.value("name", as: String.self) else { continue }
                let sql = row.value("sql", as: String.self) ?? ""
                let withoutRowid = sql.uppercased().contains("WITHOUT ROWID")
                let key = try db.primaryKey(table).columns
                let firstRow = withoutRowid
                    ? "(\(key.joined(separator: ", "))) IN (SELECT \(key.joined(separator: ", ")) FROM \(table) LIMIT 1)"
                    : "rowid IN (SELECT rowid FROM \(table) LIMIT 1)"
                for column in try db.columns(in: table) {
                    columns.append(Column(table: table, name: column.name, firstRow: firstRow))
                }
            }
            return columns
        }
    }

    enum Planted { case planted, emptyTable, refused }

    /// Puts the case's value in its column of the table's first row, past CHECK constraints
    /// and foreign keys (damage does not ask them); not if the table is empty or another
    /// constraint (NOT NULL, a primary key that must be an integer, UNIQUE) refuses it.
    static func plant(_ trialCase: Case, in path: String) -> Planted {
        do {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            return try queue.writeWithoutTransaction { db in
                guard try Row.fetchOne(db, sql: "SELECT 1 FROM \(trialCase.column.table) LIMIT 1") != nil else { return .emptyTable }
                try db.execute(sql: "PRAGMA ignore_check_constraints = ON; PRAGMA foreign_keys = OFF")
                try db.execute(sql: "UPDATE \(trialCase.column.table) SET \(trialCase.column.name) = \(trialCase.value.sql) WHERE \(trialCase.column.firstRow)")
                let changed = db.changesCount > 0
                _ = try db.checkpoint(.truncate)
                return changed ? .planted : .refused
            }
        } catch {
            return .refused
        }
    }

    /// The entities a start loads: waiting spawns in, waiting despawns out (`strata inspect`'s count).
    static func entityCount(_ path: String) throws -> Int {
        try DatabaseInspection.inspect(path: path).entityCount
    }

    /// "recovered N entities" in a start's report.
    static func recoveredEntities(_ output: String) -> Int? {
        guard let range = output.range(of: "recovered ") else { return nil }
        return Int(output[range.upperBound...].prefix { $0.isNumber })
    }

    /// What one run of the `strata` executable did.
    struct ToolRun {
        var status: Int32 = 0
        /// The signal that ended it, if one did.
        var signal: Int32?
        var timedOut = false
        var stdout = ""
        var stderr = ""
    }

    /// Runs this executable with `arguments`, its output into files (no pipe can fill), and
    /// kills it past ``toolTimeout``.
    static func runTool(_ arguments: [String], in folder: String) throws -> ToolRun {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let out = folder + "/tool.out", err = folder + "/tool.err"
        // The opens below throw if these could not be made.
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = arguments
        child.currentDirectoryURL = URL(fileURLWithPath: folder)
        child.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        child.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        child.standardInput = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        child.terminationHandler = { _ in done.signal() }
        try child.run()
        var run = ToolRun()
        if done.wait(timeout: .now() + toolTimeout) == .timedOut {
            run.timedOut = true
            kill(child.processIdentifier, SIGKILL)
            done.wait()
        }
        run.status = child.terminationStatus
        if child.terminationReason == .uncaughtSignal && !run.timedOut { run.signal = child.terminationStatus }
        run.stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        run.stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        return run
    }
}

import Foundation
@testable import StrataCanvas
import Testing
@testable import Strata

/// `strata sim` against what users do to a command: extreme arguments, a reader that goes
/// away, a terminal that closes. None of it may crash it or leave a false crash on record.
@Suite struct SimCommandEdgeTests {
    @Test(arguments: [
        (["--duration", "inf"], "--duration must be a positive number"),
        (["--duration", "1e10"], "at most 100000000"),
        (["--duration", "nan"], "--duration must be a positive number"),
        (["--switch-every", "1e300"], "--switch-every must be"),
        (["--entities", "9223372036854775807"], "--entities must be between 0 and 10000000"),
        (["--entities", "-5"], "--entities must be between 0 and 10000000"),   // not "Missing value"
        (["--duration", "-1"], "--duration must be a positive number"),
    ])
    func extremeArgumentsAreRefusedWithAReason(arguments: [String], message: String) throws {
        let directory = TestDirectory()
        let run = try ChildProcess.strata(["sim", "--db", directory.databasePath] + arguments)
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.databasePath), "nothing opened")
    }

    /// Starts `strata sim` on `directory` with stdout to `output`.
    func startSim(_ directory: TestDirectory, output: Any, _ extra: [String] = []) throws -> Process {
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: try strataExecutable())
        sim.arguments = ["sim", "--db", directory.databasePath, "--entities", "20", "--log-level", "critical"] + extra
        sim.standardOutput = output
        sim.standardError = FileHandle.nullDevice
        try sim.run()
        return sim
    }

    @Test func aReaderThatGoesAwayCostsTheOutputOnly() throws {
        // `strata sim | head -1`: the pipe closes after the first line.
        let directory = TestDirectory()
        let pipe = Pipe()
        let sim = try startSim(directory, output: pipe, ["--duration", "2"])
        _ = pipe.fileHandleForReading.availableData   // the first line
        try pipe.fileHandleForReading.close()
        sim.waitUntilExit()
        #expect(sim.terminationReason == .exit && sim.terminationStatus == 0)
        let inspection = try DatabaseInspection.inspect(path: directory.databasePath)
        #expect(inspection.cleanShutdown == true)
        #expect(inspection.crashCount == 0)
    }

    @Test func aClosedTerminalShutsDownCleanly() throws {
        let directory = TestDirectory()
        let pipe = Pipe()
        let sim = try startSim(directory, output: pipe)
        _ = pipe.fileHandleForReading.availableData   // it has opened the document
        kill(sim.processIdentifier, SIGHUP)
        sim.waitUntilExit()
        #expect(sim.terminationReason == .exit && sim.terminationStatus == 0)
        let inspection = try DatabaseInspection.inspect(path: directory.databasePath)
        #expect(inspection.cleanShutdown == true)
        #expect(inspection.crashCount == 0)
    }

    @Test func aStopSignalDuringStartupIsACleanShutdown() throws {
        // SIGTERM as early as the process can take it: before, during or just after the open.
        for delay: useconds_t in [2_000, 20_000, 60_000] {
            let directory = TestDirectory()
            let sim = try startSim(directory, output: FileHandle.nullDevice)
            usleep(delay)
            kill(sim.processIdentifier, SIGTERM)
            // A lost signal leaves the sim running: that is the failure, not a hang.
            guard eventually(timeout: .seconds(30), { !sim.isRunning }) else {
                kill(sim.processIdentifier, SIGKILL)
                Issue.record("delay \(delay) µs: SIGTERM did not stop the sim")
                continue
            }
            let opened = FileManager.default.fileExists(atPath: directory.databasePath)
            if sim.terminationReason == .uncaughtSignal {
                // Killed before its handlers were in place, which is before it opens anything.
                #expect(sim.terminationStatus == SIGTERM, "delay \(delay) µs")
                #expect(!opened, "delay \(delay) µs: killed by SIGTERM with the document open")
                continue
            }
            #expect(sim.terminationStatus == 0, "delay \(delay) µs")
            guard opened else { continue }   // stopped before the open
            // The crash counter moves only at the next open: the mark is what says "crashed".
            let inspection = try DatabaseInspection.inspect(path: directory.databasePath)
            #expect(inspection.cleanShutdown != false, "delay \(delay) µs: the session was left running")
        }
    }

    @Test func pathsThatCannotBeADatabaseAreNamedForWhatTheyAre() throws {
        let directory = TestDirectory()
        let folder = try ChildProcess.strata(["sim", "--db", directory.url.path, "--duration", "1"])
        #expect(folder.status == 1)
        #expect(folder.stderr.contains("this is a folder, not a database file"), "\(folder.stderr)")
        let file = directory.url.appendingPathComponent("plain")
        _ = FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8))
        let under = try ChildProcess.strata(["sim", "--db", file.appendingPathComponent("doc.db").path, "--duration", "1"])
        #expect(under.status == 1)
        #expect(under.stderr.contains("\(file.path) is a file, not a folder"), "\(under.stderr)")
        let inspect = try ChildProcess.strata(["inspect", directory.url.path])
        #expect(inspect.status == 1)
        #expect(inspect.stderr.contains("this is a folder"), "\(inspect.stderr)")
    }
}

/// The canvas document's metadata as a newer build would write it: its payload version is
/// one this build cannot decode.
private struct FutureDocumentMetadata: Component {
    static let typeName = "canvas.document"
    static let tier = Tier.critical
    static let payloadVersion = 99
    var note: String
    func encode(to p: inout PayloadWriter) { p.write(note) }
    init(note: String) { self.note = note }
    init(from p: inout PayloadReader, version: Int) throws { note = try p.read() }
}

@Suite struct SimDocumentEdgeTests {
    @Test func aDocumentWhoseMetadataDoesNotDecodeStillStarts() throws {
        // The document's entity is alive but its metadata cannot be loaded (newer than this
        // build). The sim keeps the row, reports it and starts the metadata again on the
        // same entity, instead of spawning its id a second time.
        var fixture = EngineFixture()
        fixture.config.database.path = fixture.directory.databasePath
        let engine = try Engine.open(config: fixture.config, components: [FutureDocumentMetadata.self], logger: quietLogger,
                                     options: fixture.options)
        let document = engine.world.spawn(id: CanvasScenario.documentID)
        engine.world.insert(FutureDocumentMetadata(note: "from a newer build"), for: document)
        try engine.shutdown()

        for start in 1 ... 2 {
            let run = try ChildProcess.strata(["sim", "--db", fixture.directory.databasePath, "--duration", "1",
                                               "--entities", "20", "--log-level", "warning"])
            #expect(run.status == 0, "start \(start): \(run.stderr)")
            // The first start reports the row it kept; the second loads the metadata the first wrote.
            if start == 1 { #expect(run.stdout.contains("1 rows that did not decode"), "\(run.stdout)") }
        }
        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.crashCount == 0)
    }
}

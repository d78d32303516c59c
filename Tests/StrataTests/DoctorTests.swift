import Foundation
import GRDB
import Testing
@testable import Strata

/// `strata doctor` and `strata maintain` from the command line, on real files.
@Suite struct DoctorTests {
    /// A document as an older Strata made it (auto_vacuum = NONE), with a few MB of free pages.
    func fragmentedOldFile(_ fixture: EngineFixture) throws {
        let engine = try fixture.open()
        let long = String(repeating: "z", count: 2000)
        let entities = (0 ..< 2000).map { engine.world.spawn(Title("\(long)\($0)")) }
        #expect(engine.compactNow())
        try engine.shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = NONE; VACUUM; PRAGMA wal_checkpoint(TRUNCATE)")
        }
        try queue.close()
        let reopened = try fixture.open()
        for entity in reopened.world.entities where reopened.world.has(Title.self, entity) { reopened.world.despawn(entity) }
        #expect(reopened.compactNow())
        try reopened.shutdown()
        _ = entities
    }

    @Test func doctorFindsFreePagesAndMaintainVacuumReturnsThem() throws {
        let fixture = EngineFixture()
        try fragmentedOldFile(fixture)
        let path = fixture.directory.databasePath

        let before = try ChildProcess.strata(["doctor", path, "--json"])
        #expect(before.status == 1, "a warning: \(before.stdout)\(before.stderr)")
        let report = try JSONDecoder.snakeCase.decode(DoctorReport.self, from: Data(before.stdout.utf8))
        #expect(report.integrity == "ok")
        #expect(report.autoVacuum == "none")
        #expect(report.freePages > 500)
        let free = try #require(report.findings.first { $0.subject == "free_pages" })
        #expect(free.severity == .warning)
        #expect(free.recommendation.contains("strata maintain PATH --vacuum"))
        #expect(report.findings.contains { $0.subject == "auto_vacuum" })
        #expect(report.tables["components"] ?? report.tables["segments"] ?? 0 > 0, "table sizes from dbstat: \(report.tables)")

        let text = try ChildProcess.strata(["doctor", path])
        #expect(text.stdout.contains("WARNING: free_pages"))
        #expect(text.stdout.contains("→ `strata maintain PATH --vacuum`"))

        let maintained = try ChildProcess.strata(["maintain", path, "--vacuum", "--json"])
        #expect(maintained.status == 0, "\(maintained.stdout)\(maintained.stderr)")
        let result = try JSONSerialization.jsonObject(with: Data(maintained.stdout.utf8)) as! [String: Any]
        let vacuum = try #require(result["vacuum"] as? [String: Any])
        #expect(vacuum["auto_vacuum_before"] as? String == "none")
        #expect(vacuum["auto_vacuum_after"] as? String == "incremental")
        #expect((result["bytes_after"] as! Int) < (result["bytes_before"] as! Int) / 2, "\(result)")

        let after = try ChildProcess.strata(["doctor", path, "--json"])
        #expect(after.status == 0, "\(after.stdout)")
        let healthy = try JSONDecoder.snakeCase.decode(DoctorReport.self, from: Data(after.stdout.utf8))
        #expect(healthy.autoVacuum == "incremental")
        #expect(healthy.freePages == 0)
        #expect(!healthy.findings.contains { $0.severity != .info })

        // The world is still there, and the document opens clean.
        let engine = try fixture.open()
        #expect(!engine.recovery.crashed)
        try engine.shutdown()
    }

    @Test func doctorReportsDamageAsAnErrorAndChangesNothing() throws {
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 3000)
        let path = fixture.directory.databasePath
        _ = try damageLeafPage(of: quietIndex, skip: 2, in: path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))

        let run = try ChildProcess.strata(["doctor", path, "--json"])
        #expect(run.status == 2, "an error: \(run.stdout)\(run.stderr)")
        let report = try JSONDecoder.snakeCase.decode(DoctorReport.self, from: Data(run.stdout.utf8))
        #expect(report.integrity != "ok")
        let finding = try #require(report.findings.first { $0.subject == "integrity" })
        #expect(finding.severity == .error)
        #expect(finding.recommendation.contains("salvaged"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "read-only")
    }

    @Test func maintainRefusesADocumentOpenElsewhere() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let run = try ChildProcess.strata(["maintain", fixture.directory.databasePath])
        #expect(run.status != 0)
        #expect(run.stderr.contains("open"), "\(run.stderr)")
    }
}

extension JSONDecoder {
    static var snakeCase: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }

    @Test(arguments: [["doctor", "PATH"], ["inspect", "PATH"], ["oplog", "PATH"], ["jobs", "PATH"], ["sync", "status", "PATH"]])
    func aReadOnlyToolLeavesNoFileBehind(arguments: [String]) throws {
        // SQLite makes -wal and -shm to read a WAL file; a read-only connection never
        // removes them. A tool that only reads leaves the folder as it found it.
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 20)
        let before = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path).sorted()
        _ = try ChildProcess.strata(arguments.map { $0 == "PATH" ? fixture.directory.databasePath : $0 })
        let after = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path).sorted()
        #expect(after == before)
    }

    /// The state a cut-short repair used to leave: no `replica` row, so this replica's
    /// operations have a NULL node. The tools that diagnose the file read it and say so.
    @Test(arguments: [["doctor", "PATH"], ["inspect", "PATH"], ["inspect", "--json", "PATH"], ["oplog", "PATH"], ["oplog", "--json", "PATH"]])
    func aToolReadsAFileWithoutItsReplicaRow(arguments: [String]) throws {
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 20)
        let path = fixture.directory.databasePath
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "DELETE FROM replica") }
        try queue.close()
        let run = try ChildProcess.strata(arguments.map { $0 == "PATH" ? path : $0 })
        #expect(!run.signalled, "\(arguments[0]) trapped: \(run.stderr)")
        #expect(run.status == 0 || run.status == 1 || run.status == 2, "\(run.stdout)\(run.stderr)")
        #expect(!run.stdout.isEmpty, "\(run.stderr)")
    }

    /// A value of another type than its column's is kept, and said: per table and column.
    @Test func doctorCountsValuesOfAnotherTypeThanTheirColumns() throws {
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 20)
        let path = fixture.directory.databasePath
        #expect(try DoctorReport.examine(path: path).valuesOfAnotherType.isEmpty, "a document as the engine writes it")
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA ignore_check_constraints = ON")
            try db.execute(sql: "UPDATE jobs SET attempts = 'three' WHERE id IN (SELECT id FROM jobs LIMIT 2)")
        }
        try queue.close()
        let report = try DoctorReport.examine(path: path)
        #expect(report.valuesOfAnotherType["jobs.attempts"] == 2, "\(report.valuesOfAnotherType)")
        let finding = try #require(report.findings.first { $0.subject == "values" })
        #expect(finding.severity == .warning && finding.detail.contains("jobs.attempts 2"), "\(finding)")
    }

    @Test func doctorReportsATruncatedFileAsDamageWithWhatToDo() throws {
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 300)
        let path = fixture.directory.databasePath
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 20_000)
        try handle.close()
        let run = try ChildProcess.strata(["doctor", path])
        #expect(run.status == 2, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("damaged or truncated") && run.stdout.contains("strata maintain --repair"), "\(run.stdout)")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal") && !FileManager.default.fileExists(atPath: path + "-shm"))
    }

    @Test(arguments: [["jobs", "PATH"], ["sync", "status", "PATH"], ["oplog", "PATH"]])
    func readOnlyToolsSayAnotherApplicationsFileIsNotAStrataDocument(arguments: [String]) throws {
        let directory = TestDirectory()
        let path = directory.databasePath
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('x')") }
        try queue.close()
        let run = try ChildProcess.strata(arguments.map { $0 == "PATH" ? path : $0 })
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stderr.contains("not a Strata document"), "\(run.stderr)")
        #expect(!run.stdout.contains("0 pending"))
    }
}

import Foundation
import Testing
@testable import Strata

/// The `strata` executable's tool commands, run as a user would.
@Suite struct HostCommandTests {
    func strata(_ arguments: [String], in directory: URL? = nil) throws -> ChildProcess {
        try ChildProcess.strata(arguments, in: directory)
    }

    @Test func checkConfigPrintsTheEffectiveConfig() throws {
        let directory = TestDirectory()
        let file = directory.url.appendingPathComponent("c.toml")
        try "[persistence]\nflush_interval_secs = 20\n".write(to: file, atomically: true, encoding: .utf8)
        let run = try strata(["check-config", file.path])
        #expect(run.status == 0)
        #expect(run.stdout.contains("flush_interval_secs = 20"))
        #expect(run.stdout.contains("critical_flush_delay_ms = 1000"))
        #expect(try StrataConfig.parse(run.stdout).persistence.flushInterval == .seconds(20))
    }

    @Test func jobsListsRetriesCancelsPausesAndResumes() throws {
        var fixture = EngineFixture()
        fixture.config.jobs.maxAttempts = 1
        let (failed, pending): (Job, Job)
        do {
            let engine = try fixture.open()
            let ids = (0 ..< 2).map { engine.world.id(of: engine.world.spawn(Title("t\($0)")))! }
            #expect(engine.flushNow())
            failed = try engine.jobs.enqueue("render", for: ids[0])
            pending = try engine.jobs.enqueue("render", for: ids[1])
            _ = try engine.jobs.claim(kinds: ["render"])
            #expect(try engine.jobs.fail(failed.id, error: "no GPU") == .dead)
            try engine.shutdown()
        }
        let path = fixture.directory.databasePath
        let list = try strata(["jobs", path])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("queue     running: 1 pending, 0 processing, 0 failed, 1 dead, 0 done"), "\(list.stdout)")
        #expect(list.stdout.contains("#\(failed.id)  render  dead") && list.stdout.contains("last error: no GPU"))

        #expect(try strata(["jobs", path, "retry", "\(failed.id)"]).status == 0)
        #expect(try strata(["jobs", path, "cancel", "\(pending.id)"]).status == 0)
        let missing = try strata(["jobs", path, "cancel", "999"])
        #expect(missing.status == 1 && missing.stderr.contains("no job 999"))
        #expect(try strata(["jobs", path, "pause"]).status == 0)
        let json = try strata(["jobs", "--json", path])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["paused"] as? Bool == true)
        #expect(object["counts"] as? [String: Int] == ["pending": 1])
        let jobs = try #require(object["jobs"] as? [[String: Any]])
        #expect(jobs.map { $0["id"] as? Int } == [Int(failed.id)])
        #expect(jobs.first?["attempts"] as? Int == 0, "retried with a fresh count")
        #expect(try strata(["jobs", path, "resume"]).status == 0)
        #expect(try JobListing.read(path: path).paused == false)
        let bad = try strata(["jobs", path, "retry"])
        #expect(bad.status != 0 && bad.stderr.contains("retry needs the job's id"))
    }

    @Test func checkConfigFailsWithTheKeyAndLine() throws {
        let directory = TestDirectory()
        let file = directory.url.appendingPathComponent("bad.toml")
        try "[database]\npage_size = 3000\n".write(to: file, atomically: true, encoding: .utf8)
        let run = try strata(["check-config", file.path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("bad.toml:2: database.page_size: must be a power of two"))
        #expect(run.stdout.isEmpty)
    }

    @Test func inspectJSONIsParseableWithTheDocumentedKeys() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        engine.world.spawn(Position(x: 1, y: 2))
        engine.appendOperation(kind: "shape.create", payload: [1])
        engine.appendOperation(kind: "shape.move", payload: [2])
        let node = engine.nodeID.description
        try engine.shutdown()
        let run = try strata(["inspect", "--json", fixture.directory.databasePath])
        #expect(run.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["entity_count"] as? Int == 1)
        #expect(object["clean_shutdown"] as? Bool == true)
        #expect(object["page_size"] as? Int == 512)
        #expect(object["schema_version"] as? Int == Store.schemaVersion)
        #expect(object["node_id"] as? String == node)
        #expect(object["operation_log"] as? [String: Int] == [node: 2])
        #expect(object["vector_clock"] as? [String: Int] == [node: 2])
        #expect(object["segments"] as? Int == 1, "the spawn's batch: one segment row")
        #expect((object["segment_bytes"] as? Int ?? 0) > 0)
        #expect(object["compactions"] as? Int == 0)
    }

    @Test func oplogShowsEachNodeAndItsOperations() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let peer = NodeID()
        engine.appendOperation(kind: "shape.create", payload: [1, 2])
        engine.receiveOperation(LoggedOperation(node: peer, seq: 2, timestamp: HybridTimestamp(milliseconds: 9), kind: "peer", payload: []))
        let me = engine.nodeID.description
        try engine.shutdown()
        let run = try strata(["oplog", "--json", fixture.directory.databasePath])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(object["node_id"] as? String == me)
        let nodes = try #require(object["nodes"] as? [String: [String: Any]])
        #expect(nodes[me]?["count"] as? Int == 1)
        #expect(nodes[peer.description]?["gaps"] as? [[Int]] == [[1, 1]])
        let operations = try #require(object["operations"] as? [[String: Any]])
        #expect(Set(operations.compactMap { $0["kind"] as? String }) == ["shape.create", "peer"])
        let text = try strata(["oplog", fixture.directory.databasePath, "--node", me])
        #expect(text.stdout.contains("(this replica)  1 operations, highest 1, vector clock 1, no gaps"), "\(text.stdout)")
        #expect(try strata(["oplog", fixture.directory.databasePath, "--after", "3"]).status != 0, "--after needs --node")
    }

    @Test func simSwitchesBetweenDocumentsAndLeavesEachClean() throws {
        let directory = TestDirectory()
        let paths = ["a.db", "b.db"].map { directory.url.appendingPathComponent($0).path }
        let run = try strata(["sim", "--documents", paths.joined(separator: ","), "--switch-every", "0.5", "--duration", "2.2",
                              "--entities", "20", "--log-level", "error"])
        #expect(run.status == 0, "\(run.stderr)")
        let switches = run.stdout.components(separatedBy: "strata sim: switched to").count - 1
        #expect(switches >= 2, "\(run.stdout)")
        var closes = 0
        for path in paths {
            let inspection = try DatabaseInspection.inspect(path: path)
            #expect(inspection.entityCount > 2)
            #expect(inspection.cleanShutdown == true)
            #expect(inspection.crashCount == 0)
            #expect(inspection.owner == nil)
            closes += inspection.cleanShutdownCount
        }
        #expect(closes == switches + 1, "every switch and the final shutdown closed a document cleanly")
        #expect(try strata(["sim", "--documents", paths[0]]).status != 0, "one document is not a rotation")
    }

    /// Three documents named as a user types them (relative, one with `./`), switched in a
    /// loop: each is opened in turn, again and again, and none is refused by this process.
    @Test func simSwitchesThroughThreeDocumentsInALoop() throws {
        let directory = TestDirectory()
        let run = try strata(["sim", "--documents", "a.db,./b.db,c.db", "--switch-every", "0.3", "--duration", "5",
                              "--entities", "10", "--log-level", "error"], in: directory.url)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("could not switch"), "\(run.stderr)")
        let targets = run.stdout.components(separatedBy: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "strata sim: switched to ") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map { URL(fileURLWithPath: String($0)).lastPathComponent }
        }
        // Four switches show the loop (b, c, a, then b again); a loaded machine may fit no more.
        #expect(targets.count >= 4, "\(run.stdout)")
        let expected = (0 ..< targets.count).map { ["b.db", "c.db", "a.db"][$0 % 3] }
        #expect(targets == expected, "in turn, and round again")
        for name in ["a.db", "b.db", "c.db"] {
            let inspection = try DatabaseInspection.inspect(path: directory.url.appendingPathComponent(name).path)
            #expect(inspection.cleanShutdown == true && inspection.crashCount == 0 && inspection.owner == nil, "\(name)")
            #expect(inspection.cleanShutdownCount >= 1, "\(name)")
        }
        let first = try DatabaseInspection.inspect(path: directory.url.appendingPathComponent("a.db").path)
        #expect(first.cleanShutdownCount >= 2, "the first document was opened again and closed again")
        let same = try strata(["sim", "--documents", "a.db,./a.db"], in: directory.url)
        #expect(same.status != 0 && same.stderr.contains("two or more different paths"), "one document named twice")
    }

    /// A number from the command line is range-checked before any conversion: refused by
    /// name, never a trap (1e300 seconds used to stop the process converting to an integer).
    @Test(arguments: [(["bench", "--seconds", "1e300", "--entities", "10", "--moving", "1"], "--seconds"),
                      (["bench", "--compaction-backlog-kb", "1e300", "--entities", "10", "--moving", "1"], "--compaction-backlog-kb"),
                      (["bench", "--snapshot-secs", "1e300", "--entities", "10", "--moving", "1"], "--snapshot-secs"),
                      (["bench", "--precision", "1e300", "--entities", "10", "--moving", "1"], "--precision"),
                      (["bench", "--precision", "0", "--entities", "10", "--moving", "1"], "--precision"),
                      (["bench", "--motion", "wavy", "--entities", "10", "--moving", "1"], "--motion"),
                      (["power", "--poll-interval", "1e300"], "--poll-interval"),
                      (["sim", "--duration", "1e300"], "--duration"),
                      (["sim", "--switch-every", "-1", "--documents", "a.db,b.db"], "--switch-every")])
    func aNumberPastItsRangeIsRefusedByName(arguments: [String], option: String) throws {
        let directory = TestDirectory()
        let run = try strata(arguments, in: directory.url)
        #expect(!run.signalled, "\(run.stderr)")
        #expect(run.status == 64 && run.stderr.contains(option), "\(run.status): \(run.stderr)")
    }

    @Test func inspectOfAMissingFileFails() throws {
        let run = try strata(["inspect", "/nonexistent/strata.db"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("no database file"))
    }

    @Test func simRejectsABadConfigNamingTheKey() throws {
        let directory = TestDirectory()
        let file = directory.url.appendingPathComponent("c.toml")
        try "[persistence]\nflush_interval_secs = \"soon\"\n".write(to: file, atomically: true, encoding: .utf8)
        let run = try strata(["sim", "--config", file.path, "--duration", "1"], in: directory.url)
        #expect(run.status == 1)
        #expect(run.stderr.contains("persistence.flush_interval_secs: expected a number of seconds, found a string"))
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("strata-data").path))
    }
}

/// Tools asked to change a document never replace it on their own: a damaged file is
/// refused and left byte for byte as it was (only `strata maintain --repair` sets it
/// aside), and a missing one is not created.
@Suite struct ToolRefusalTests {
    static let changingTools: [[String]] = [["maintain", "PATH"], ["jobs", "PATH", "pause"], ["sync", "retry", "PATH"]]

    @Test(arguments: changingTools)
    func aDamagedDocumentIsRefusedAndLeftAsItIs(arguments: [String]) throws {
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 3000)
        let path = fixture.directory.databasePath
        _ = try damageLeafPage(of: "entities", skip: 2, in: path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))

        let run = try ChildProcess.strata(arguments.map { $0 == "PATH" ? path : $0 })
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(run.stderr.contains("left as it is") && run.stderr.contains("strata maintain --repair"), "\(run.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "unchanged")
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path)
        #expect(!files.contains { $0.contains(".corrupt-") }, "nothing set aside: \(files)")
    }

    @Test func maintainRepairSetsTheDamagedFileAsideAndSalvages() throws {
        let fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 3000)
        let path = fixture.directory.databasePath
        _ = try damageLeafPage(of: "entities", skip: 2, in: path)
        let run = try ChildProcess.strata(["maintain", path, "--repair"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("was damaged: set aside as"), "\(run.stdout)")
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path)
        #expect(files.contains { $0.contains(".corrupt-") }, "\(files)")
        #expect(try DatabaseInspection.inspect(path: path).entityCount > 0)
    }

    @Test(arguments: changingTools)
    func aMissingDocumentIsNotCreated(arguments: [String]) throws {
        let directory = TestDirectory()
        let path = directory.databasePath
        let run = try ChildProcess.strata(arguments.map { $0 == "PATH" ? path : $0 })
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test(arguments: [
        ("postgresql://me@localhost:99999/strata", "port 99999 is not between 1 and 65535"),
        ("postgresql://me@localhost/strata?sslmode=maybe", "sslmode maybe is not one of"),
        ("ftp://localhost/strata", "not a postgresql:// URL"),
        ("http://localhost/strata", "the service's URL is its scheme, host and port only"),
        ("http://sync.example.com", "plain http:// only to a loopback address"),
        ("https://sync.example.com", "a sync service needs a token: --token-file FILE"),
    ])
    func aSyncServerThatCannotBeRightIsRefusedBeforeTheDocumentIsOpened(url: String, message: String) throws {
        let directory = TestDirectory()
        let run = try ChildProcess.strata(["sim", "--db", directory.databasePath, "--duration", "1", "--sync", url])
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.databasePath), "nothing opened")
    }
}

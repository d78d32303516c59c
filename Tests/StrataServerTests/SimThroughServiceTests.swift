import Foundation
import Testing
@testable import StrataServer

/// Real `strata sim` processes (`swift build --build-tests` builds `strata` with these tests)
/// syncing through a service instance in this process: the device's HTTP transport, its
/// token file, its long-poll listening.
@Suite(.serialized) struct SimThroughServiceTests {
    /// `.build/debug/strata`, built beside the service.
    static var strata: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/strata").path
    }

    /// Starts `command` with its output (and errors) in the file `output`.
    static func start(_ command: [String], output: String) throws -> Process {
        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: command.first ?? "/bin/false")
        sim.arguments = Array(command.dropFirst())
        try #require(FileManager.default.createFile(atPath: output, contents: nil))
        sim.standardOutput = FileHandle(forWritingAtPath: output) ?? FileHandle.nullDevice
        sim.standardError = sim.standardOutput
        try sim.run()
        return sim
    }

    /// How many of the other devices' operations a sim's summary says it applied.
    static func applied(_ out: String) -> Int? {
        out.split(separator: "\n").first { $0.contains("of other devices'") }
            .flatMap { $0.components(separatedBy: "of other devices', ").last?.split(separator: " ").first }.flatMap { Int($0) }
    }

    /// A reader's device: the service refuses its pushes as read-only, and it pulls on (it
    /// applies the writer's edits), its own kept in its outbox, none a dead letter. Made a
    /// writer, its next session pushes them.
    @Test(.timeLimit(.minutes(2))) func aReaderPullsOnAndKeepsItsEditsUntilItMayWrite() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.strata), "swift build --build-tests builds strata")
        let service = try await TestService { $0.membershipCache = .zero }   // a grant below, straight in PostgreSQL
        defer { Task { await service.stop() } }
        let document = freshDocument()
        let folder = NSTemporaryDirectory() + "strata-reader-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try service.grant(.writer, "wendy", document)
        try service.grant(.reader, "rita", document)
        func sim(_ subject: String, _ arguments: [String]) throws -> Process {
            try service.token(subject).write(toFile: "\(folder)/\(subject).token", atomically: true, encoding: .utf8)
            return try Self.start([Self.strata, "sim", "--db", "\(folder)/\(subject).db", "--sync", service.base, "--sync-document", document,
                                   "--token-file", "\(folder)/\(subject).token", "--log-level", "warning"] + arguments,
                                  output: "\(folder)/\(subject).out")
        }
        let runs = try [sim("wendy", ["--duration", "5", "--sync-settle", "2", "--entities", "20", "--seed", "1"]),
                        sim("rita", ["--duration", "5", "--sync-settle", "2", "--entities", "20", "--seed", "2"])]
        for run in runs { await run.exited() }
        let rita = (try? String(contentsOfFile: "\(folder)/rita.out", encoding: .utf8)) ?? ""
        #expect(runs.allSatisfy { $0.terminationStatus == 0 }, "\(rita)")
        #expect(rita.contains("read-only"), "\(rita)")
        #expect((Self.applied(rita) ?? 0) > 0, "the reader applied the writer's operations: \(rita)")
        #expect(try service.postgres.sql("SELECT count(*) FROM strata_operations WHERE document = '\(document)' AND pushed_by = 'rita'") == "0")
        // `strata sync status --json`: operations not pushed yet, and the dead letters.
        func outbox() throws -> (pending: Int, deadLetters: Int) {
            let text = try TestPostgres.run(Self.strata, ["sync", "status", "\(folder)/rita.db", "--json"])
            let fields = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
            return ((fields["pending"] as? Int) ?? -1, (fields["dead_letters"] as? [Any])?.count ?? -1)
        }
        let kept = try outbox()
        #expect(kept.pending > 0 && kept.deadLetters == 0, "\(kept)")

        try service.grant(.writer, "rita", document)
        // Five seconds of sync: a loaded machine (the whole suite at once) took longer than two
        // to connect and push the outbox in a full `make test`.
        let again = try sim("rita", ["--duration", "0.05", "--sync-settle", "5", "--entities", "0"])
        await again.exited()
        #expect(try service.postgres.sql("SELECT count(*) FROM strata_operations WHERE document = '\(document)' AND pushed_by = 'rita'") != "0")
        let pushed = try outbox()
        #expect(pushed.pending == 0 && pushed.deadLetters == 0, "\(pushed)")
    }

    /// Both devices' polls are an hour apart: what one pushes reaches the other only because
    /// its listening long-poll woke it. They end with equal replicated digests. Over HTTPS
    /// where the machine allows (plain HTTP devices are KillTests'): the devices trust the
    /// service's certificate as a shipped game would, through the system's CA bundle (theirs,
    /// in a mount namespace of their own); a third device whose system does not trust it
    /// says so and pushes nothing.
    @Test(.timeLimit(.minutes(2))) func twoSimsConvergeThroughTheServiceWokenByItAlone() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.strata), "swift build --build-tests builds strata")
        let overTLS = TestCertificate.canTrustPrivately
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let service = try await TestService {
            if overTLS { $0.tlsCertificate = certificate.certificate; $0.tlsKey = certificate.key }
        }
        defer { Task { await service.stop() } }
        let document = freshDocument()
        let folder = NSTemporaryDirectory() + "strata-sims-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let config = "\(folder)/device.toml"
        try "[sync]\npull_interval_ms = 3600000\nsafety_pull_secs = 3600\n".write(toFile: config, atomically: true, encoding: .utf8)
        var runs: [Process] = []
        let subjects = overTLS ? ["alice", "bob", "carol"] : ["alice", "bob"]
        for (index, subject) in subjects.enumerated() {
            try service.grant(.writer, subject, document)
            try service.token(subject).write(toFile: "\(folder)/\(subject).token", atomically: true, encoding: .utf8)
            let command = [Self.strata, "sim", "--config", config, "--db", "\(folder)/\(subject).db", "--sync", service.base, "--sync-document", document,
                             "--token-file", "\(folder)/\(subject).token", "--duration", "6", "--sync-settle", "3",
                             "--entities", "20", "--seed", "\(index + 1)", "--log-level", "warning"]
            runs.append(try Self.start(overTLS && subject != "carol" ? certificate.trusting(command) : command, output: "\(folder)/\(subject).out"))
        }
        for sim in runs { await sim.exited() }
        if overTLS {
            let carol = (try? String(contentsOfFile: "\(folder)/carol.out", encoding: .utf8)) ?? ""
            #expect(carol.contains("SSL certificate problem"), "carol does not trust the certificate: \(carol)")
            #expect(try service.postgres.sql("SELECT count(*) FROM strata_nodes WHERE document = '\(document)' AND subject = 'carol'") == "0")
        }
        var digests: [String] = []
        for subject in ["alice", "bob"] {
            let out = (try? String(contentsOfFile: "\(folder)/\(subject).out", encoding: .utf8)) ?? ""
            #expect(runs.prefix(2).allSatisfy { $0.terminationStatus == 0 }, "\(subject): \(out)")
            #expect((Self.applied(out) ?? 0) > 0, "\(subject) applied the other's operations: \(out)")
            let inspect = try TestPostgres.run(Self.strata, ["inspect", "\(folder)/\(subject).db"])
            // `digest  HEX replicated; per type …`: the replicated one (a viewport is each device's own).
            digests.append(inspect.split(separator: "\n").first { $0.hasPrefix("digest") }?.split(separator: " ").dropFirst().first.map(String.init) ?? "none")
        }
        #expect(digests[0] == digests[1] && digests[0] != "none", "\(digests)")
        #expect(try service.postgres.sql("SELECT count(DISTINCT pushed_by) FROM strata_operations WHERE document = '\(document)'") == "2")
    }
}

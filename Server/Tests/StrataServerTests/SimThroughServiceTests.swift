import Foundation
import Testing
@testable import StrataServer

/// Real `strata sim` processes (the engine's package builds `strata` before these tests run)
/// syncing through a service instance in this process: the device's HTTP transport, its
/// token file, its long-poll listening.
@Suite(.serialized) struct SimThroughServiceTests {
    /// `.build/debug/strata` of the engine's package (this package's parent folder).
    static var strata: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/strata").path
    }

    /// Both devices' polls are an hour apart: what one pushes reaches the other only because
    /// its listening long-poll woke it. They end with equal replicated digests. Over HTTPS,
    /// the devices trust the service's certificate as a shipped game would: it is in the
    /// system's CA bundle (theirs, in a mount namespace of their own); a third device
    /// whose system does not trust it says so and pushes nothing.
    @Test(.timeLimit(.minutes(2)), arguments: [false, true]) func twoSimsConvergeThroughTheServiceWokenByItAlone(overTLS: Bool) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.strata), "build the engine's package first (make test does)")
        guard !overTLS || TestCertificate.canTrustPrivately else { return }
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
            let sim = Process()
            let command = [Self.strata, "sim", "--config", config, "--db", "\(folder)/\(subject).db", "--sync", service.base, "--sync-document", document,
                             "--token-file", "\(folder)/\(subject).token", "--duration", "6", "--sync-settle", "3",
                             "--entities", "20", "--seed", "\(index + 1)", "--log-level", "warning"]
            let trusted = overTLS && subject != "carol" ? certificate.trusting(command) : command
            sim.executableURL = URL(fileURLWithPath: trusted[0])
            sim.arguments = Array(trusted.dropFirst())
            sim.standardOutput = FileHandle(forWritingAtPath: "\(folder)/\(subject).out") ?? {
                _ = FileManager.default.createFile(atPath: "\(folder)/\(subject).out", contents: nil)
                return FileHandle(forWritingAtPath: "\(folder)/\(subject).out") ?? FileHandle.nullDevice
            }()
            sim.standardError = sim.standardOutput
            try sim.run()
            runs.append(sim)
        }
        for sim in runs { sim.waitUntilExit() }
        if overTLS {
            let carol = (try? String(contentsOfFile: "\(folder)/carol.out", encoding: .utf8)) ?? ""
            #expect(carol.contains("SSL certificate problem"), "carol does not trust the certificate: \(carol)")
            #expect(try service.postgres.sql("SELECT count(*) FROM strata_nodes WHERE document = '\(document)' AND subject = 'carol'") == "0")
        }
        var digests: [String] = []
        for subject in ["alice", "bob"] {
            let out = (try? String(contentsOfFile: "\(folder)/\(subject).out", encoding: .utf8)) ?? ""
            #expect(runs.prefix(2).allSatisfy { $0.terminationStatus == 0 }, "\(subject): \(out)")
            let applied = out.split(separator: "\n").first { $0.contains("of other devices'") }
                .flatMap { $0.components(separatedBy: "of other devices', ").last?.split(separator: " ").first }.flatMap { Int($0) }
            #expect((applied ?? 0) > 0, "\(subject) applied the other's operations: \(out)")
            let inspect = try TestPostgres.run(Self.strata, ["inspect", "\(folder)/\(subject).db"])
            // `digest  HEX replicated; per type …`: the replicated one (a viewport is each device's own).
            digests.append(inspect.split(separator: "\n").first { $0.hasPrefix("digest") }?.split(separator: " ").dropFirst().first.map(String.init) ?? "none")
        }
        #expect(digests[0] == digests[1] && digests[0] != "none", "\(digests)")
        #expect(try service.postgres.sql("SELECT count(DISTINCT pushed_by) FROM strata_operations WHERE document = '\(document)'") == "2")
    }
}

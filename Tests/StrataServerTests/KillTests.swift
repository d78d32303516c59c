import Foundation
import Testing
@testable import StrataServer

/// Three `strata sim` devices through a `strata-server` process: one device SIGKILLed and
/// started again, the instance SIGKILLed and started again on the same port. Every device
/// ends with the same replicated digest, its outbox empty, and the server holds each
/// operation once.
@Suite(.serialized) struct KillTests {
    static var serverBinary: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/strata-server").path
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestFailure("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func startServer(port: Int, database: String, secret: String, log: String) throws -> Process {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: Self.serverBinary)
        server.arguments = ["serve", "--database", database, "--listen", "127.0.0.1:\(port)", "--hmac-secret-file", secret, "--log-level", "error"]
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        server.standardOutput = FileHandle(forWritingAtPath: log)
        server.standardError = server.standardOutput
        try server.run()
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline, !((try? String(contentsOfFile: log, encoding: .utf8))?.contains("listening on") ?? false) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        return server
    }

    @Test(.timeLimit(.minutes(3))) func threeDevicesConvergeThroughADeviceKillAndAnInstanceKill() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.serverBinary), "swift build --build-tests builds strata-server")
        try #require(FileManager.default.isExecutableFile(atPath: SimThroughServiceTests.strata))
        let postgres = try TestPostgres.shared.get()
        let folder = NSTemporaryDirectory() + "strata-kill-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let secret = TokenKey.randomSecret()
        _ = FileManager.default.createFile(atPath: "\(folder)/secret", contents: Data(secret))
        let key = try TokenKey(id: nil, secret: secret)
        let document = freshDocument()
        let members = try Members(url: postgres.url)
        let subjects = ["alice", "bob", "carol"]
        for subject in subjects {
            try members.grant(.writer, to: subject, on: document)
            try TokenSigner.token(subject: subject, audience: "strata", key: key, ttl: .seconds(600))
                .write(toFile: "\(folder)/\(subject).token", atomically: true, encoding: .utf8)
        }
        members.close()
        let port = try Self.freePort()
        var server = try startServer(port: port, database: postgres.url, secret: "\(folder)/secret", log: "\(folder)/server-1.log")
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        try "[sync]\nretry_max_backoff_secs = 1\n".write(toFile: "\(folder)/device.toml", atomically: true, encoding: .utf8)

        func sim(_ subject: String, session: Int, duration: Int, seed: Int) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: SimThroughServiceTests.strata)
            process.arguments = ["sim", "--config", "\(folder)/device.toml", "--db", "\(folder)/\(subject).db", "--sync", "http://127.0.0.1:\(port)",
                                 "--sync-document", document, "--token-file", "\(folder)/\(subject).token", "--duration", "\(duration)",
                                 "--sync-settle", "6", "--entities", "15", "--seed", "\(seed)", "--log-level", "error"]
            let log = "\(folder)/\(subject)-\(session).out"
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: log)
            process.standardError = process.standardOutput
            try process.run()
            return process
        }
        var devices = try subjects.enumerated().map { index, subject in try sim(subject, session: 1, duration: 12, seed: index + 1) }
        try await Task.sleep(for: .seconds(3))
        kill(devices[1].processIdentifier, SIGKILL)
        await devices[1].exited()
        try await Task.sleep(for: .seconds(1))
        devices[1] = try sim("bob", session: 2, duration: 8, seed: 9)
        try await Task.sleep(for: .seconds(2))
        kill(server.processIdentifier, SIGKILL)
        await server.exited()
        try await Task.sleep(for: .seconds(1))
        server = try startServer(port: port, database: postgres.url, secret: "\(folder)/secret", log: "\(folder)/server-2.log")
        for device in devices { await device.exited() }

        var digests: [String] = []
        for (index, subject) in subjects.enumerated() {
            let session = index == 1 ? 2 : 1
            let out = (try? String(contentsOfFile: "\(folder)/\(subject)-\(session).out", encoding: .utf8)) ?? ""
            #expect(devices[index].terminationStatus == 0, "\(subject): \(out)")
            #expect(out.contains("outbox 0,"), "\(subject) pushed everything: \(out)")
            let inspect = try TestPostgres.run(SimThroughServiceTests.strata, ["inspect", "\(folder)/\(subject).db"])
            digests.append(inspect.split(separator: "\n").first { $0.hasPrefix("digest") }?.split(separator: " ").dropFirst().first.map(String.init) ?? "none")
        }
        #expect(Set(digests).count == 1 && digests[0] != "none", "\(digests)")
        let rows = try postgres.sql("SELECT count(*) || ' ' || count(DISTINCT (node, seq)) || ' ' || count(DISTINCT id) FROM strata_operations WHERE document = '\(document)'")
        let counts = rows.split(separator: " ").compactMap { Int($0) }
        #expect(counts.count == 3 && counts[0] > 0 && Set(counts).count == 1, "operations, distinct (node, seq), distinct ids: \(rows)")
        kill(server.processIdentifier, SIGTERM)
        await server.exited()
    }
}

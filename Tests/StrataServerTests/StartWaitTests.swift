import Foundation
import Logging
import Testing
@testable import StrataServer

/// An instance started while its database is down (`[database] start_wait_secs`): it waits,
/// trying again, and starts once the database answers; with no wait it fails at once.
@Suite(.serialized) struct StartWaitTests {
    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    @Test(.timeLimit(.minutes(2))) func anInstanceStartedBeforeItsDatabaseWaitsForIt() async throws {
        let postgres = try TestPostgres()   // a server of its own: this test stops it
        defer { try? FileManager.default.removeItem(atPath: postgres.folder) }
        try postgres.stop()
        let secretFile = NSTemporaryDirectory() + "strata-server-secret-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: secretFile, contents: Data(TokenKey.randomSecret()))
        defer { unlink(secretFile) }
        var config = ServerConfig()
        config.databaseURL = postgres.url
        config.port = 0
        config.hmacSecretFile = secretFile
        config.poolSize = 2
        config.startWait = .seconds(60)
        var logger = Logger(label: "strata.server.test")
        logger.logLevel = .critical

        let started = Flag()
        let starting = Task { [config, logger] in
            let service = try await SyncService(config: config, logger: logger)
            started.set()
            return service
        }
        try await Task.sleep(for: .seconds(2))
        #expect(!started.isSet, "started with its database down")
        try postgres.start()
        let service = try await starting.value
        #expect(started.isSet)
        #expect(service.identity.schemaVersion > 0)
        service.shutdown()

        try postgres.stop()
        config.startWait = .zero
        let refused = Flag()
        do {
            _ = try await SyncService(config: config, logger: logger)
        } catch {
            refused.set()
        }
        #expect(refused.isSet, "with no wait, a start on a database that is down fails")
    }
}

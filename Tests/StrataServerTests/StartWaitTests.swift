import Foundation
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
        try postgres.stop()
        let secretFile = NSTemporaryDirectory() + "strata-server-secret-\(UUID().uuidString)"
        try #require(FileManager.default.createFile(atPath: secretFile, contents: Data(TokenKey.randomSecret())))
        defer { unlink(secretFile) }
        var config = TestService.config(database: postgres.url, secretFile: secretFile)
        config.startWait = .seconds(60)
        let logger = TestService.logger

        let started = Flag()
        let starting = Task { [config, logger] in
            let service = try await SyncService(config: config, logger: logger)
            started.set()
            return service
        }
        // Real time: the database is a process of its own, down for these 2 s (the start's
        // first tries fail within them: 250 ms, then 500 ms, then 1 s apart).
        try await Task.sleep(for: .seconds(2))
        #expect(!started.isSet, "started with its database down")
        try postgres.start()
        let service = try await starting.value
        #expect(service.identity.schemaVersion > 0)
        service.shutdown()

        try postgres.stop()
        config.startWait = .zero
        var refused = false
        do {
            _ = try await SyncService(config: config, logger: logger)
        } catch {
            refused = true
        }
        #expect(refused, "with no wait, a start on a database that is down fails")
    }
}

import Foundation
import GRDB
@testable import Strata
import StrataCanvas
import StrataPostgres
import Synchronization
import Testing

/// The sync against a real PostgreSQL server (a private one, `PrivatePostgres`), online and
/// offline through a NetworkManager mock on a private system bus, and by stopping the server.
@Suite struct SyncTests {
    /// This test's document: tests share a server (``PrivatePostgres/shared()``) unless they
    /// stop it, and each reads only its own document's rows.
    let document = "doc-\(UUID().uuidString.prefix(8))"

    /// An engine whose sync points at `server`, pushing and pulling quickly.
    private func fixture(_ server: PrivatePostgres, _ name: String = #function, attempts: Int = 3) -> EngineFixture {
        var fixture = EngineFixture(name)
        fixture.config.sync.server = server.url
        fixture.config.sync.document = document
        fixture.config.sync.maxAttempts = attempts
        fixture.config.sync.retryInitialBackoff = .milliseconds(20)
        fixture.config.sync.retryMaxBackoff = .milliseconds(200)
        fixture.config.sync.pullInterval = .milliseconds(50)
        fixture.config.sync.pushInterval = .milliseconds(10)
        fixture.config.sync.requestTimeout = .seconds(5)
        return fixture
    }

    private func transport(_ server: PrivatePostgres) throws -> PostgresTransport {
        try PostgresTransport(url: server.url, document: document, logger: quietLogger)
    }

    /// The server's operations of `node`, in sequence order: (seq, kind).
    private func serverLog(_ server: PrivatePostgres, node: NodeID) throws -> [(Int64, String)] {
        let text = try server.sql("SELECT seq || ' ' || kind FROM strata_operations WHERE document = '\(document)' AND node = '\(node)' ORDER BY seq")
        return text.split(separator: "\n").map { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return (Int64(parts[0])!, String(parts[1]))
        }
    }

    /// An engine syncing to `server` on a document that logged `logged` (one operation of
    /// each kind) in a session before, and was then damaged by `damage` while closed.
    private func syncingAfterDamage(_ server: PrivatePostgres, logged: [String], damage: String,
                                    _ name: String = #function) throws -> (EngineFixture, Engine) {
        var fixture = fixture(server, name)
        fixture.config.sync.networkSource = .none
        do {
            let engine = try fixture.open()
            for kind in logged { engine.appendOperation(kind: kind, payload: []) }
            try engine.shutdown()
        }
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { try $0.execute(sql: damage) }
        try queue.close()
        let engine = try fixture.open()
        engine.startSync(transport: try transport(server)) { _ in }
        engine.endTick()
        return (fixture, engine)
    }

    private func serverCount(_ server: PrivatePostgres) throws -> Int {
        Int(try server.sql("SELECT count(*) FROM strata_operations WHERE document = '\(document)'")) ?? -1
    }

    @Test func offlineWritesArePushedInOrderWhenTheNetworkComesBack() throws {
        let server = try PrivatePostgres.shared()
        let bus = try PrivateSystemBus()
        try bus.startNetworkManager(state: 20)   // disconnected
        let fixture = fixture(server)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let network = NetworkMonitor(timeout: .milliseconds(500), busAddress: bus.address, logger: quietLogger)
        network.start()
        defer { network.stop() }
        #expect(network.connectivity == .offline)   // start() waits for the first reading
        engine.startSync(transport: try transport(server), network: network) { _ in }

        let kinds = (1 ... 5).map { "edit.\($0)" }
        for kind in kinds { engine.appendOperation(kind: kind, payload: Array(kind.utf8)) }
        #expect(engine.flushNow())
        engine.endTick()
        // Offline: the reads work (the log, the outbox), nothing reaches the server.
        #expect(try engine.syncStatus().pending == 5)
        #expect(try OperationLogReader(path: fixture.directory.databasePath).operations(of: engine.nodeID).map(\.kind) == kinds)
        Thread.sleep(forTimeInterval: 0.3)   // time a wrongly online client would use to push
        #expect((try? serverCount(server)) ?? 0 == 0)
        #expect(engine.sync?.network == .offline)

        try bus.setNetworkState(70)
        #expect(eventually(timeout: .seconds(20)) { (try? serverCount(server)) == 5 },
                "network \(network.connectivity) (\(network.detail)), sync \(String(describing: engine.sync))")
        let log = try serverLog(server, node: engine.nodeID)
        #expect(log.map(\.0) == [1, 2, 3, 4, 5])
        #expect(log.map(\.1) == kinds)
        #expect(eventually { (try? engine.syncStatus().pending) == 0 })
        let state = try #require(engine.sync)
        #expect(state.pushedOperations == 5 && state.duplicatesIgnored == 0)
        // Came online, then pushed: within the second the specification asks for (loose bound: a test, not a benchmark).
        let latency = try #require(state.lastPushAt) - (try #require(state.cameOnlineAt))
        #expect(latency >= 0 && latency < 5_000)
    }

    @Test func aPoisonOperationIsDeadLetteredAloneAndBlocksNothing() throws {
        let server = try PrivatePostgres()   // its own: the test adds a trigger to the server
        var fixture = fixture(server, attempts: 2)
        fixture.config.sync.networkSource = .none
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        // The schema exists once a client connected; then the server refuses one kind.
        let first = try transport(server)
        _ = try awaitBlocking { try await first.connect() }
        try awaitBlocking { await first.disconnect() }
        try server.sql("""
            CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.kind = 'poison' THEN RAISE EXCEPTION 'poison row'; END IF; RETURN NEW; END $$;
            CREATE TRIGGER refuse_poison BEFORE INSERT ON strata_operations FOR EACH ROW EXECUTE FUNCTION refuse_poison();
            """)
        engine.startSync(transport: try transport(server)) { _ in }
        for kind in ["a", "b", "poison", "c", "d", "e"] { engine.appendOperation(kind: kind, payload: []) }
        #expect(engine.flushNow())
        engine.endTick()

        #expect(eventually(timeout: .seconds(10)) { (try? serverLog(server, node: engine.nodeID).map(\.1)) == ["a", "b", "c", "d", "e"] })
        #expect(eventually(timeout: .seconds(10)) { (try? engine.syncStatus().deadLetters.count) == 1 })
        let status = try engine.syncStatus()
        #expect(status.deadLetters.first?.sequence == 3 && status.deadLetters.first?.attempts == 2)
        #expect(status.deadLetters.first?.lastError.contains("poison row") == true)
        #expect(status.pending == 0 && status.failing.isEmpty)
        // Later operations are not held back by the dead letter either.
        engine.appendOperation(kind: "f", payload: [])
        #expect(engine.flushNow())
        engine.endTick()
        #expect(eventually(timeout: .seconds(10)) { (try? serverLog(server, node: engine.nodeID).last?.1) == "f" })

        // Fixed on the server, retried by hand: it goes through, exactly once.
        try server.sql("DROP TRIGGER refuse_poison ON strata_operations")
        #expect(try engine.retrySyncDeadLetters() == 1)
        #expect(eventually(timeout: .seconds(10)) { (try? serverLog(server, node: engine.nodeID).map(\.0)) == [1, 2, 3, 4, 5, 6, 7] })
        #expect(eventually { (try? engine.syncStatus().outboxCount) == 0 })
    }

    /// `local_operations.kind` holds one of Strata's codes (1, 2) or a host's text; its CHECK
    /// lets any integer in. An integer that is no code is pushed as its digits: a start with
    /// the sync reads it (it used to trap in the outbox at every start).
    @Test func anOperationKindThatIsNoCodeIsPushedAsItsDigits() throws {
        let server = try PrivatePostgres.shared()
        let (_, engine) = try syncingAfterDamage(server, logged: ["a", "b"], damage: "UPDATE local_operations SET kind = 3 WHERE seq = 2")
        defer { try? engine.shutdown() }
        #expect(eventually(timeout: .seconds(10)) { (try? serverLog(server, node: engine.nodeID).map(\.1)) == ["a", "3"] })
        #expect(eventually { (try? engine.syncStatus().outboxCount) == 0 })
    }

    /// A row of this device's log that does not read (here a type number that names
    /// nothing) is a dead letter at once, and the outbox goes on past it: skipped silently,
    /// it held `pushed_through` below it, and every push sent the same operations again.
    @Test func aRowThatDoesNotReadIsADeadLetterAndTheRestIsPushed() throws {
        let server = try PrivatePostgres.shared()
        let (fixture, engine) = try syncingAfterDamage(server, logged: ["a", "b", "c", "d", "e"],
                                                       damage: "UPDATE local_operations SET type = 99 WHERE seq = 3")
        defer { try? engine.shutdown() }
        #expect(eventually(timeout: .seconds(10)) { (try? serverLog(server, node: engine.nodeID).map(\.0)) == [1, 2, 4, 5] })
        #expect(eventually(timeout: .seconds(10)) { (try? engine.syncStatus().pushedThrough) == 5 })
        var status = try engine.syncStatus()
        #expect(status.deadLetters.map(\.sequence) == [3] && status.pending == 0 && status.failing.isEmpty)
        #expect(status.deadLetters.first?.lastError == SyncOutbox.unreadableError)

        // Later operations go through; a retry by hand reads the row again and parks it again.
        engine.appendOperation(kind: "f", payload: [])
        #expect(engine.flushNow())
        engine.endTick()
        #expect(eventually(timeout: .seconds(10)) { (try? serverLog(server, node: engine.nodeID).map(\.0)) == [1, 2, 4, 5, 6] })
        #expect(try engine.retrySyncDeadLetters() == 1)
        engine.endTick()
        #expect(eventually(timeout: .seconds(10)) { (try? engine.syncStatus().deadLetters.first?.deadAt).flatMap { $0 } != nil })
        status = try engine.syncStatus()
        #expect(status.deadLetters.map(\.sequence) == [3] && status.pushedThrough == 6)
        #expect(try serverLog(server, node: engine.nodeID).map(\.0) == [1, 2, 4, 5, 6])
        // The doctor says what happened: not a refusal by the server.
        let outbox = try DoctorReport.examine(path: fixture.directory.databasePath).findings.filter { $0.subject == "outbox" }
        #expect(outbox.map(\.severity) == [.error] && outbox.first?.detail == "1 operation of this device not pushed: its row in the log does not read (damaged) or is gone (dead letters)",
                "\(outbox)")
    }

    /// Operation ids are foreseeable (made from the node and the sequence): one pushed first
    /// by another node under the same id must not make the owner's push insert nothing.
    @Test func anOperationWhoseIdAnotherNodePushedFirstIsStillStored() throws {
        let server = try PrivatePostgres.shared()
        let owner = NodeID(), other = NodeID()
        let id = try #require(StoredOperation.derivedID(node: owner, seq: 1))
        let first = LoggedOperation(id: id, node: other, seq: 1, timestamp: HybridTimestamp(milliseconds: 1), kind: "squat", payload: [])
        let mine = LoggedOperation(id: id, node: owner, seq: 1, timestamp: HybridTimestamp(milliseconds: 2), kind: "mine", payload: [1])
        let transport = try transport(server)
        let receipts = try awaitBlocking {
            _ = try await transport.connect()
            let a = try await transport.push([first]), b = try await transport.push([mine]), again = try await transport.push([mine])
            await transport.disconnect()
            return [a, b, again]
        }
        #expect(receipts.map(\.inserted) == [1, 1, 0], "the owner's operation is stored once, a retry inserts nothing")
        #expect(try serverLog(server, node: owner).map(\.1) == ["mine"])
    }

    /// A server that answers and refuses the connection for good (no such database), or a
    /// URL libpq does not take: said as such and not retried for the whole run.
    @Test func aConnectionThatCanNeverWorkStopsTheSyncAndSaysWhy() throws {
        let server = try PrivatePostgres.shared()
        #expect(throws: SyncError.self) { _ = try PostgresEndpoint(url: server.url + "&bogus=1") }
        do {
            _ = try PostgresEndpoint(url: server.url + "&bogus=1")
        } catch let error as SyncError {
            #expect(error.kind == .misconfigured && error.message.contains("bogus"), "\(error)")
        }
        var fixture = fixture(server)
        fixture.config.sync.networkSource = .none
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let missing = server.url.replacingOccurrences(of: "/postgres?", with: "/no_such_database?")
        engine.startSync(transport: try PostgresTransport(url: missing, document: document, logger: quietLogger)) { _ in }
        #expect(eventually(timeout: .seconds(10)) { engine.sync?.lastError?.contains("stopped") == true }, "\(engine.sync?.lastError ?? "")")
        #expect(engine.sync?.lastError?.contains("does not exist") == true, "\(engine.sync?.lastError ?? "")")
        let requests = engine.sync?.requests ?? 0
        Thread.sleep(forTimeInterval: 0.5)
        #expect(engine.sync?.requests == requests, "not tried again")
    }

    @Test func aServerStoppedMidPushLosesAndDuplicatesNothing() throws {
        let server = try PrivatePostgres()
        var fixture = fixture(server)
        fixture.config.sync.networkSource = .none
        fixture.config.sync.batchSize = 7
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        engine.startSync(transport: try transport(server)) { _ in }
        for round in 0 ..< 6 {
            for i in 0 ..< 25 { engine.appendOperation(kind: "op.\(round).\(i)", payload: []) }
            #expect(engine.flushNow())
            engine.endTick()
            if round == 2 {
                server.stop()
                Thread.sleep(forTimeInterval: 0.2)
            }
            if round == 4 { try server.start() }
        }
        #expect(eventually(timeout: .seconds(20)) { (try? serverCount(server)) == 150 })
        #expect(try serverLog(server, node: engine.nodeID).map(\.0) == Array(1 ... 150))
        #expect(eventually { (try? engine.syncStatus().outboxCount) == 0 })
        #expect(engine.sync?.lastError != nil)   // it did see the server go
    }

    @Test func pulledOperationsAreLoggedAndAppliedOnce() throws {
        let server = try PrivatePostgres.shared()
        var a = fixture(server, "pullA"), b = fixture(server, "pullB")
        a.config.sync.networkSource = .none
        b.config.sync.networkSource = .none
        let first = try a.open(), second = try b.open()
        defer { try? first.shutdown(); try? second.shutdown() }
        var applied: [LoggedOperation] = []
        first.startSync(transport: try transport(server)) { _ in }
        second.startSync(transport: try transport(server)) { applied.append($0) }
        let sent = (1 ... 20).map { first.appendOperation(kind: "shape.move", payload: [UInt8($0)]) }
        #expect(first.flushNow())
        first.endTick()
        #expect(eventually(timeout: .seconds(10)) {
            second.endTick()
            return applied.count == 20
        })
        #expect(applied == sent)
        #expect(second.vectorClock[first.nodeID] == 20)
        #expect(second.flushNow())
        let reader = try OperationLogReader(path: b.directory.databasePath)
        #expect(try reader.operations(of: first.nodeID).map(\.id) == sent.map(\.id))
        // Nothing comes back to its author, and nothing twice.
        Thread.sleep(forTimeInterval: 0.3)
        second.endTick()
        first.endTick()
        #expect(applied.count == 20)
        #expect(first.vectorClock.count == 1)
    }

    @Test func aPushReachesAListeningDeviceWithoutAPoll() throws {
        let server = try PrivatePostgres.shared()
        var a = fixture(server, "listenA"), b = fixture(server, "listenB")
        a.config.sync.networkSource = .none
        b.config.sync.networkSource = .none
        // Polls so rare that only the server's notification can bring the operations in time.
        b.config.sync.pullInterval = .seconds(3600)
        b.config.sync.safetyPull = .seconds(3600)
        let first = try a.open(), second = try b.open()
        defer { try? first.shutdown(); try? second.shutdown() }
        var applied: [LoggedOperation] = []
        first.startSync(transport: try transport(server)) { _ in }
        second.startSync(transport: try transport(server)) { applied.append($0) }
        #expect(eventually(timeout: .seconds(10)) { second.sync?.listening == true && second.sync?.notifiedPulls == 1 })
        let idle = second.sync!

        let sent = (1 ... 5).map { first.appendOperation(kind: "shape.move", payload: [UInt8($0)]) }
        first.endTick()
        #expect(first.flushNow())
        #expect(eventually(timeout: .seconds(10)) {
            second.endTick()
            return applied.count == sent.count
        })
        #expect(applied == sent)
        let state = second.sync!
        #expect(state.notifications > idle.notifications)
        #expect(state.notifiedPulls > idle.notifiedPulls)
        // Listening cost the server nothing but the pulls it asked for.
        #expect(state.requests - idle.requests == state.pulls - idle.pulls)
    }

    @Test func aBacklogIsPushedAndJoinedInGrowingPagesAndAppliedOverSeveralTicks() throws {
        let server = try PrivatePostgres.shared()
        var a = fixture(server, "joinA"), b = fixture(server, "joinB")
        a.config.sync.networkSource = .none
        a.config.sync.batchSize = 500
        b.config.sync.networkSource = .none
        b.config.sync.pullBatchSize = 100
        b.config.sync.joinBatchSize = 1600
        let first = try a.open()
        let sent = (0 ..< 5000).map { first.appendOperation(kind: "join", payload: [UInt8($0 % 256)]) }
        first.endTick()
        #expect(first.flushNow())
        first.startSync(transport: try transport(server)) { _ in }
        #expect(eventually(timeout: .seconds(20)) {
            first.endTick()
            return first.sync?.acknowledgedThrough == Int64(sent.count)
        })
        // The backlog went in pushes of 500, 1000, 2000, then the rest (1500): 4, not 10.
        #expect(first.sync!.pushes <= 5, "\(first.sync!.pushes) pushes")
        try first.shutdown()

        let second = try b.open()
        defer { try? second.shutdown() }
        var applied: [LoggedOperation] = []
        var mostInOneTick = 0
        second.startSync(transport: try transport(server)) { applied.append($0) }
        #expect(eventually(timeout: .seconds(20)) {
            let before = applied.count
            second.endTick()
            mostInOneTick = max(mostInOneTick, applied.count - before)
            return applied.count >= sent.count
        })
        #expect(applied.map(\.id) == sent.map(\.id))
        // Pages of 100, 200, 400, 800, then 1600: 5000 operations in 6 pages, not 50.
        let state = second.sync!
        #expect(state.pulls <= 8, "\(state.pulls) pulls")
        #expect(!state.catchingUp)
        #expect(mostInOneTick <= 2000, "\(mostInOneTick) operations applied in one tick")
        #expect(second.flushNow())
        #expect(try SyncStatus.read(path: b.directory.databasePath).receivedOperations == sent.count)
    }

    @Test func aNotificationStormCostsOnePullPerWake() throws {
        let server = try PrivatePostgres.shared()
        var b = fixture(server, "stormB")
        b.config.sync.networkSource = .none
        b.config.sync.pullInterval = .seconds(3600)
        b.config.sync.safetyPull = .seconds(3600)
        let second = try b.open()
        defer { try? second.shutdown() }
        second.startSync(transport: try transport(server)) { _ in }
        #expect(eventually(timeout: .seconds(10)) { second.sync?.listening == true && second.sync?.notifiedPulls == 1 })
        let before = second.sync!
        // 5000 distinct notifications on the document's channel, in one transaction and in 50.
        try server.sql("SELECT pg_notify('strata_' || md5('\(document)'), i::text) FROM generate_series(1, 5000) i")
        for i in 0 ..< 50 { try server.sql("SELECT pg_notify('strata_' || md5('\(document)'), 'x\(i)')") }
        #expect(eventually(timeout: .seconds(10)) { (second.sync?.notifications ?? 0) >= before.notifications + 2 })
        Thread.sleep(forTimeInterval: 0.3)   // whatever else the storm wakes
        let state = second.sync!
        let wakes = state.notifications - before.notifications, pulls = state.pulls - before.pulls
        // Notifications are read in batches (one wake for all a read brings) and a wake only
        // marks a pull due: a pass pulls once for every wake since the last.
        #expect(wakes <= 200, "\(wakes) wakes for 5050 notifications")
        #expect(pulls <= wakes, "\(pulls) pulls for \(wakes) wakes")
    }

    @Test func aListenerThatLosesTheServerPollsUntilItListensAgain() throws {
        let server = try PrivatePostgres()
        var a = fixture(server, "relistenA"), b = fixture(server, "relistenB")
        a.config.sync.networkSource = .none
        b.config.sync.networkSource = .none
        b.config.sync.safetyPull = .seconds(3600)
        let first = try a.open(), second = try b.open()
        defer { try? first.shutdown(); try? second.shutdown() }
        var applied: [LoggedOperation] = []
        first.startSync(transport: try transport(server)) { _ in }
        second.startSync(transport: try transport(server)) { applied.append($0) }
        #expect(eventually(timeout: .seconds(10)) { second.sync?.listening == true })
        server.stop()
        #expect(eventually(timeout: .seconds(10)) { second.sync?.listening == false })
        let sent = (1 ... 3).map { first.appendOperation(kind: "while.down", payload: [UInt8($0)]) }
        first.endTick()
        #expect(first.flushNow())
        try server.start()
        #expect(eventually(timeout: .seconds(20)) {
            first.endTick()
            second.endTick()
            return applied.count == sent.count && second.sync?.listening == true
        })
        #expect(applied == sent)
    }

    @Test func airplaneModeFiftyTimesUnderLoad() throws {
        let server = try PrivatePostgres.shared()
        let bus = try PrivateSystemBus()
        try bus.startNetworkManager(state: 70)
        var a = fixture(server, "planeA"), b = fixture(server, "planeB")
        b.config.sync.networkSource = .none
        let first = try a.open(), second = try b.open()
        defer { try? first.shutdown(); try? second.shutdown() }
        let network = NetworkMonitor(timeout: .milliseconds(500), busAddress: bus.address, logger: quietLogger)
        network.start()
        defer { network.stop() }
        var received: [LoggedOperation] = []
        first.startSync(transport: try transport(server), network: network) { _ in }
        second.startSync(transport: try transport(server)) { received.append($0) }

        var sent: [LoggedOperation] = []
        for toggle in 0 ..< 50 {
            try bus.setNetworkState(toggle % 2 == 0 ? 20 : 70)
            for _ in 0 ..< 10 { sent.append(first.appendOperation(kind: "load", payload: [UInt8(toggle)])) }
            #expect(first.flushNow())
            first.endTick()
            second.endTick()
            Thread.sleep(forTimeInterval: 0.02)
        }
        try bus.setNetworkState(70)
        #expect(eventually(timeout: .seconds(20)) {
            first.endTick()
            second.endTick()
            return received.count >= sent.count && (try? serverCount(server)) == sent.count
        })
        // No loss, no duplicate, each node's order kept: on the server and on the other device.
        #expect(try serverLog(server, node: first.nodeID).map(\.0) == Array(1 ... Int64(sent.count)))
        #expect(received.map(\.id) == sent.map(\.id))
        #expect(second.vectorClock[first.nodeID] == Int64(sent.count))
        #expect(second.operationGaps.isEmpty)
    }
}

/// Runs an async call from a synchronous test and waits for it. The call runs on a thread
/// of its own: the test itself blocks a thread of the shared pool (two such tests at once
/// would hold both of a 2-core machine's).
func awaitBlocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, any Error>?
    let executor = SyncExecutor(name: "test.await")
    defer { executor.stop() }
    Task(executorPreference: executor) {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result!.get()
}

/// `strata sim --sync`: real processes, one server.
/// The libpq transport's bounds, without a server that answers.
@Suite struct PostgresTransportTests {
    /// A Unix socket in `folder` that accepts and never answers; returns its descriptor.
    private func silentServer(in folder: TestDirectory) -> Int32 {
        let socketPath = folder.url.appendingPathComponent(".s.PGSQL.5432").path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            socketPath.utf8CString.withUnsafeBytes { raw.copyMemory(from: $0) }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        #expect(listen(fd, 4) == 0)
        return fd
    }

    @Test(.timeLimit(.minutes(1)))   // a stop that waited on the server would hang here
    func aListenerOnAServerThatNeverAnswersSaysSoAndStops() throws {
        let folder = TestDirectory()
        let fd = silentServer(in: folder)
        defer { close(fd) }
        let transport = try PostgresTransport(url: "postgresql://strata@/strata?host=\(folder.url.path)", document: "doc",
                                              timeout: .milliseconds(300), logger: quietLogger)
        let events = Mutex<[ListenEvent]>([])
        #expect(try awaitBlocking { await transport.startListening { event in events.withLock { $0.append(event) } } })
        #expect(eventually(timeout: .seconds(10)) { !events.withLock { $0 }.isEmpty })
        let first = events.withLock { $0.first }
        guard case .lost(let reason) = first else {
            Issue.record("not told the listener lost the server: \(String(describing: first))")
            return
        }
        #expect(reason.contains("no answer within 300 ms"), "\(reason)")
        try awaitBlocking { await transport.stopListening() }
    }

    @Test func aServerThatNeverAnswersIsGivenUpOnWithinTheTimeout() throws {
        // A listening socket that accepts and says nothing: the connect waits for the
        // server's first message, and must give up at the timeout, not hang.
        let folder = TestDirectory()
        let fd = silentServer(in: folder)
        defer { close(fd) }
        let transport = try PostgresTransport(url: "postgresql://strata@/strata?host=\(folder.url.path)", document: "doc",
                                              timeout: .milliseconds(300), logger: quietLogger)
        let outcome = try awaitBlocking { () async -> SyncError? in
            do {
                _ = try await transport.connect()
                return nil
            } catch let error as SyncError {
                return error
            } catch {
                return SyncError(.failed, "\(error)")
            }
        }
        #expect(outcome?.kind == .unreachable, "\(String(describing: outcome))")
        #expect(outcome?.message.contains("no answer within 300 ms") == true, "\(String(describing: outcome))")
    }
}

@Suite(.serialized) struct SyncSimTests {
    @Test func syncStatusAndRetryFromTheCommandLine() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        for i in 0 ..< 3 { engine.appendOperation(kind: "k\(i)", payload: []) }
        try engine.shutdown()

        let status = try ChildProcess.strata(["sync", "status", fixture.directory.databasePath, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(object["pending"] as? Int == 3 && object["outbox"] as? Int == 3)
        #expect((object["dead_letters"] as? [Any])?.isEmpty == true && object["pushed_through"] as? Int == 0)
        let text = try ChildProcess.strata(["sync", "status", fixture.directory.databasePath])
        #expect(text.stdout.contains("outbox        3 operations (3 not pushed yet"))
        let retry = try ChildProcess.strata(["sync", "retry", fixture.directory.databasePath])
        #expect(retry.status == 0 && retry.stdout.contains("0 dead letters back in the outbox"), "\(retry.stderr)")
        let missing = try ChildProcess.strata(["sync", "status", fixture.directory.url.appendingPathComponent("none.db").path])
        #expect(missing.status == 1 && missing.stderr.contains("no database file"))
    }

    /// What devices share: every entity's synced components (the viewport and the peer
    /// cursor are each device's own).
    private func shared(_ path: String) throws -> [EntityID: [String: PersistedComponents.Value]] {
        var result: [EntityID: [String: PersistedComponents.Value]] = [:]
        for (id, components) in try PersistedComponents.read(path).entities {
            let synced = components.filter { !["canvas.viewport", "canvas.peer_cursor", "canvas.drawing_here"].contains($0.key) }
            if !synced.isEmpty { result[id] = synced }
        }
        return result
    }

    @Test func theServersNoticesAreNotTheSimsOutput() throws {
        // Every connect after the first meets the schema in place ("relation … already
        // exists, skipping"): libpq would print that NOTICE on standard error.
        let server = try PrivatePostgres()
        for device in ["deviceA", "deviceB"] {
            let directory = TestDirectory(device)
            let run = try ChildProcess.strata(["sim", "--db", directory.databasePath, "--sync", server.url, "--duration", "1",
                                               "--entities", "5", "--sync-settle", "0", "--log-level", "warning"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(!run.stderr.contains("NOTICE"), "\(run.stderr)")
        }
    }

    @Test func twoDevicesConverge() throws {
        let server = try PrivatePostgres()
        let first = TestDirectory("deviceA"), second = TestDirectory("deviceB")
        let common = ["--sync", server.url, "--sync-document", "shared", "--entities", "40", "--duration", "6", "--sync-settle", "3",
                      "--activity", "4"]
        let a = try startSim(first, common + ["--seed", "1"])
        let b = try startSim(second, common + ["--seed", "2"])
        a.waitUntilExit()
        b.waitUntilExit()
        #expect(a.terminationStatus == 0 && b.terminationStatus == 0)

        let left = try shared(first.databasePath), right = try shared(second.databasePath)
        #expect(left.count >= 60, "both devices made shapes: \(left.count) entities")
        #expect(left.keys.sorted { $0.description < $1.description } == right.keys.sorted { $0.description < $1.description })
        let differing = left.keys.filter { left[$0] != right[$0] }
        #expect(differing.isEmpty, "\(differing.count) entities differ")
        // Both outboxes are empty: the server has every operation of both, once.
        for path in [first.databasePath, second.databasePath] {
            #expect(try SyncStatus.read(path: path).outboxCount == 0)
        }
        let nodes = try [first, second].map { try #require(try OperationLogReader(path: $0.databasePath).nodeID()) }
        for node in nodes {
            let local = try OperationLogReader(path: first.databasePath).operations(of: node, limit: 100_000).map(\.seq)
            let remote = try server.sql("SELECT seq FROM strata_operations WHERE node = '\(node)' ORDER BY seq")
                .split(separator: "\n").compactMap { Int64($0) }
            #expect(!local.isEmpty && local == remote)
        }
    }

    /// A device killed while drawing: the stroke's points logged before the kill reach the
    /// other device, and the next start finishes the stroke there as everywhere: never a
    /// stroke on one device only.
    @Test func aStrokeInProgressOnAKilledDeviceReachesTheOtherDeviceFinished() throws {
        let server = try PrivatePostgres()
        let first = TestDirectory("strokeA"), second = TestDirectory("strokeB")
        let common = ["--sync", server.url, "--sync-document", "strokes", "--entities", "10", "--activity", "6"]
        var drawing: EntityID?
        for attempt in 0 ..< 10 where drawing == nil {
            let sim = try startSim(first, common + ["--seed", "\(attempt + 1)"])
            Thread.sleep(forTimeInterval: 2.5 + Double(attempt % 4) * 0.3)
            kill(sim.processIdentifier, SIGKILL)
            sim.waitUntilExit()
            let file = try PersistedComponents.read(first.databasePath)
            drawing = try file.entities.keys.first { id in
                try file.value(StrokeStyle.self, of: id)?.finished == false && (try file.value(StrokePoints.self, of: id)?.xy.count ?? 0) > 0
            }
        }
        let stroke = try #require(drawing, "no kill landed while a stroke was drawn with points on disk")
        let pointsAtKill = try #require(try PersistedComponents.read(first.databasePath).value(StrokePoints.self, of: stroke))

        let again = try ChildProcess.strata(["sim", "--db", first.databasePath, "--log-level", "error", "--duration", "1",
                                             "--sync-settle", "2"] + common)
        #expect(again.status == 0, "\(again.stderr)")
        let other = try ChildProcess.strata(["sim", "--db", second.databasePath, "--log-level", "error", "--duration", "1",
                                             "--sync-settle", "3"] + common + ["--seed", "99"])
        #expect(other.status == 0, "\(other.stderr)")
        for path in [first.databasePath, second.databasePath] {
            let file = try PersistedComponents.read(path)
            #expect(try file.value(StrokeStyle.self, of: stroke)?.finished == true, "\(path)")
            #expect(try file.value(StrokePoints.self, of: stroke) == pointsAtKill, "the points as drawn until the kill, \(path)")
        }
    }

    @Test func aSimKilledOfflineSendsItsOutboxExactlyOnceAfterRestart() throws {
        let server = try PrivatePostgres()
        let bus = try PrivateSystemBus()
        try bus.startNetworkManager(state: 20)   // offline
        let directory = TestDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try strataExecutable())
        process.arguments = ["sim", "--db", directory.databasePath, "--log-level", "error", "--sync", server.url, "--entities", "30"]
        process.currentDirectoryURL = directory.url
        process.environment = bus.environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        #expect(eventually(timeout: .seconds(30)) { ((try? SyncStatus.read(path: directory.databasePath))?.pending ?? 0) >= 40 })
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // Offline all along: the server was never even contacted (its schema does not exist yet).
        #expect(try server.sql("SELECT to_regclass('strata_operations') IS NULL") == "t")
        let node = try #require(try OperationLogReader(path: directory.databasePath).nodeID())
        let before = try OperationLogReader(path: directory.databasePath).operations(of: node, limit: 100_000)

        // Back online, the next session pushes what the killed one left, exactly once.
        try bus.setNetworkState(70)
        let again = try ChildProcess.strata(["sim", "--db", directory.databasePath, "--log-level", "error", "--sync", server.url,
                                             "--entities", "30", "--duration", "2", "--sync-settle", "2"],
                                            environment: bus.environment, in: directory.url)
        #expect(again.status == 0, "\(again.stderr)")
        let ids = try server.sql("SELECT id FROM strata_operations WHERE node = '\(node)' ORDER BY seq").split(separator: "\n").map(String.init)
        #expect(Set(ids).count == ids.count)
        #expect(before.allSatisfy { ids.contains($0.id.description) })
        let after = try OperationLogReader(path: directory.databasePath).operations(of: node, limit: 100_000)
        #expect(ids == after.map(\.id.description))
        #expect(try SyncStatus.read(path: directory.databasePath).outboxCount == 0)
    }
}

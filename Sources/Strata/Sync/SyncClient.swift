import Foundation
import Logging
import Synchronization

/// Pushes the outbox to a ``SyncTransport`` and pulls the other devices' operations, on
/// a thread of its own (`strata.sync`); every call to the server is bounded by
/// `request_timeout_ms`. The tick thread never waits on it: pulled operations reach the
/// world through `SyncInbox` at an end of tick (``Engine/startSync(transport:network:applying:)``).
///
/// The loop, while not stopped:
/// 1. Offline (the network monitor says so): wait for it to come back. Coming online
///    pushes at once, whatever the backoff.
/// 2. Push: the outbox's next `batch_size` operations in ONE round trip, again and again
///    while it has any (a backlog never waits for the next local write; each full batch
///    is followed by one twice as large, up to `join_batch_size`); at most one push in
///    flight. A batch the server refuses is split in halves until the refused
///    operation is alone: it gets an attempt (and is a dead letter after `max_attempts`),
///    the others go through, so a poison operation never blocks the ones behind it.
/// 3. Pull: pages of other nodes' operations the local vector clock lacks (as it was when
///    the sync started), after the last position seen. When the server says something
///    changed (`listen`: ``SyncTransport/startListening(_:)``), at once, and otherwise
///    every `safety_pull_secs`; without notifications, every `pull_interval_ms`. While
///    pages come back full (a device joining), each is twice the last, up to
///    `join_batch_size`.
/// 4. A failure to reach the server backs off exponentially (`retry_initial_backoff_ms`
///    doubling to `retry_max_backoff_secs`), counting against no operation.
///
/// States: created ──start──▶ running ──stop──▶ stopped.
public final class SyncClient: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is guarded by `lock`, or atomic; the rest is
    // immutable, or touched only by the sync thread (`server`, `pullCursor`, `failures`).
    private let transport: any SyncTransport
    let outbox: SyncOutbox
    @usableFromInline let inbox: SyncInbox
    private let config: SyncConfig
    private let node: NodeID
    /// The vector clock when the sync started: a pull asks for what lies above it.
    private let startClock: [NodeID: Int64]
    private let network: (any ConnectivitySource)?
    private let wallClock: @Sendable () -> Int64
    private let logger: Logger

    private let lock = Lock()
    private var stopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    /// Where the transport's async calls run (not the shared cooperative pool).
    private let executor = SyncExecutor(name: "strata.sync.io")
    private var current = State()
    /// The highest sequence this replica has appended (the tick thread sets it): the
    /// outbox is only read when it moved past what was pushed, or a retry is due.
    let localHighest = Atomic<Int64>(0)
    /// Wakes a pause early: ``wake()`` and ``stop()`` (`wakeCount` is guarded by it).
    private let waker = NSCondition()
    private var wakeCount = 0

    private var server: SyncServerInfo?
    private var pullCursor: Int64 = 0
    /// The next page's size: `pull_batch_size`, doubled while pages come back full.
    private var pageSize: Int
    /// The next push's size: `batch_size`, doubled while batches are full.
    private var pushSize: Int
    /// The server said the document changed (or listening began): pull at the next pass.
    private let pullDue = Atomic<Bool>(false)
    /// The transport listens for the server's news (set from the listener's events).
    private let listening = Atomic<Bool>(false)
    private var listenerStarted = false
    private var lastPull = ContinuousClock.now
    private var pushedHighest: Int64 = 0
    private var nextFailureDue: Int64? = 0
    private var consecutiveFailures = 0

    /// What the client is doing, for status lines and tests (any thread).
    public struct State: Sendable, Equatable {
        /// The last call to the server succeeded.
        public var online = false
        /// What the network monitor says (unknown without one).
        public var network = Connectivity.unknown
        public var pushes = 0
        public var pushedOperations = 0
        /// Operations the server already had when they were pushed (a retried push).
        public var duplicatesIgnored = 0
        public var pulledOperations = 0
        public var refusals = 0
        public var deadLetters = 0
        public var lastError: String?
        /// When the last push was acknowledged (wall ms), and when the network last came online.
        public var lastPushAt: Int64?
        public var cameOnlineAt: Int64?
        /// When the first push after coming online was acknowledged (wall ms).
        public var firstPushAt: Int64?
        /// The server clock minus the local one at the last connect (ms).
        public var clockSkew: Int64?
        /// The server has every operation of this replica through this sequence.
        public var acknowledgedThrough: Int64 = 0
        /// Operations refused by the server: retried, or dead letters.
        public var failing = 0
        /// The server's news reaches this device (`listen`), so it pulls when told.
        public var listening = false
        /// Wakes by the server's news (each may stand for many notifications).
        public var notifications = 0
        /// Calls to the server: connects, pushes, pulls (what an idle device costs it).
        public var requests = 0
        /// Pull requests, and the ones a notification or listening began asked for.
        public var pulls = 0
        public var notifiedPulls = 0
        /// Catching up: pages come back full (a device joining a large document, or back
        /// after a long time offline); the operations pulled since it began.
        public var catchingUp = false
        public var catchUpPulled = 0

        /// This replica's operations the server lacks, given the highest logged one.
        public func outbox(highest: Int64) -> Int { Int(max(0, highest - acknowledgedThrough)) }
    }

    init(transport: any SyncTransport, outbox: SyncOutbox, inbox: SyncInbox, config: SyncConfig, node: NodeID,
         clock: [NodeID: Int64], localHighest: Int64, network: (any ConnectivitySource)?,
         wallClock: @escaping @Sendable () -> Int64, logger: Logger) {
        self.transport = transport
        self.outbox = outbox
        self.inbox = inbox
        self.config = config
        self.node = node
        self.startClock = clock
        self.network = network
        self.wallClock = wallClock
        self.logger = logger
        self.pageSize = config.pullBatchSize
        self.pushSize = config.batchSize
        self.localHighest.store(localHighest, ordering: .relaxed)
    }

    deinit { executor.stop() }

    public var state: State { lock.withLock { current } }

    /// The server's node id once connected (its acknowledgements are recorded under it).
    var serverNode: NodeID? { lock.withLock { connectedNode } }
    private var connectedNode: NodeID?
    private var shouldStop: Bool { lock.withLock { stopping } }

    func start() {
        let thread = Thread { [self] in
            run()
            executor.stop()
            finished.signal()
        }
        thread.name = "strata.sync"
        lock.withLock { self.thread = thread }
        thread.start()
    }

    /// Stops the loop, waiting for a push in flight (bounded by the request timeout).
    func stop() {
        let started = lock.withLock { () -> Bool in
            stopping = true
            return thread != nil
        }
        guard started else { return }
        signalWaker()
        _ = finished.wait(timeout: .now() + (config.requestTimeout * 2 + .seconds(1)).seconds)
    }

    /// Looks at the outbox now (new operations were committed, or dead letters retried).
    func wake() {
        lock.withLock { nextFailureDue = 0 }
        signalWaker()
    }

    /// A commit logged operations (this replica's up to `highest`, if any): the outbox is
    /// looked at now, not at the next `push_interval_ms`. Writer thread.
    func committed(_ highest: Int64?) {
        if let highest {
            var seen = localHighest.load(ordering: .relaxed)
            while seen < highest {
                let (exchanged, now) = localHighest.compareExchange(expected: seen, desired: highest, ordering: .acquiringAndReleasing)
                if exchanged { break }
                seen = now
            }
        }
        signalWaker()
    }

    // MARK: The loop

    private func run() {
        var retryAt: ContinuousClock.Instant?
        var nextPull = ContinuousClock.now
        lastPull = .now
        var networkSeen = -1
        var wasOffline = false
        while !shouldStop {
            // 1. The network.
            if let network, network.changeCount != networkSeen {
                networkSeen = network.changeCount
                let now = network.connectivity
                update { $0.network = now }
                if now == .offline {
                    if !wasOffline { logger.info("sync: offline (network)") }
                    wasOffline = true
                } else if wasOffline {
                    wasOffline = false
                    logger.info("sync: network back: pushing now")
                    update { $0.cameOnlineAt = wallClock(); $0.firstPushAt = nil }
                    retryAt = nil
                    consecutiveFailures = 0
                    nextPull = .now
                }
            }
            if wasOffline {
                update { $0.online = false }
                pause(.milliseconds(50))
                continue
            }
            if let retryAt, ContinuousClock.now < retryAt {
                pause(min(.milliseconds(50), retryAt - .now))
                continue
            }
            retryAt = nil
            do {
                try connectIfNeeded()
                startListeningOnce()
                try pushAll()
                let told = pullDue.exchange(false, ordering: .acquiringAndReleasing)
                if told || ContinuousClock.now >= nextPull {
                    let caughtUp = try pullAll(told: told)
                    let listens = listening.load(ordering: .acquiring)
                    // Not caught up (the tick thread has not taken the last pages): soon again.
                    nextPull = .now + (!caughtUp ? config.pushInterval : listens ? config.safetyPull : config.pullInterval)
                } else if !listening.load(ordering: .acquiring) {
                    nextPull = min(nextPull, lastPull + config.pullInterval)
                }
                consecutiveFailures = 0
                update { $0.online = true }
            } catch {
                let failure = error as? SyncError ?? SyncError(.failed, "\(error)")
                consecutiveFailures += 1
                let wait = backoff(consecutiveFailures)
                retryAt = .now + wait
                if failure.kind == .unreachable { server = nil }
                update {
                    if $0.online || $0.lastError != failure.description {
                        self.logger.warning("sync: \(failure); retrying in \(Int(wait.milliseconds)) ms")
                    }
                    $0.online = false
                    $0.lastError = failure.description
                }
                try? outbox.noteError(failure.description, now: wallClock())
                if failure.kind == .unreachable { blocking { await self.transport.disconnect() } }
                continue
            }
            pause(config.pushInterval)
        }
        if listenerStarted { blocking { await self.transport.stopListening() } }
        blocking { await self.transport.disconnect() }
    }

    /// Asks the transport to listen for the server's news, once, after the first connect
    /// (`listen`). Its events only wake this thread.
    private func startListeningOnce() {
        guard config.listen, !listenerStarted else { return }
        listenerStarted = true
        let started = (try? call(toServer: false) { [self] in
            await self.transport.startListening { [weak self] event in self?.heard(event) }
        }) ?? false
        if !started { logger.info("sync: this transport cannot listen; pulling every \(Int(config.pullInterval.milliseconds)) ms") }
    }

    /// From the listener's thread.
    private func heard(_ event: ListenEvent) {
        switch event {
        case .listening:
            listening.store(true, ordering: .releasing)
            update { $0.listening = true }
            logger.debug("sync: listening for the server's news")
        case .changed:
            update { $0.notifications += 1 }
        case .lost(let reason):
            listening.store(false, ordering: .releasing)
            update { $0.listening = false }
            logger.info("sync: not listening (\(reason)); pulling every \(Int(config.pullInterval.milliseconds)) ms until it is back")
            signalWaker()
            return
        }
        pullDue.store(true, ordering: .releasing)
        signalWaker()
    }

    private func connectIfNeeded() throws {
        guard server == nil else { return }
        let info = try call { try await self.transport.connect() }
        let before = wallClock()
        if let serverNow = try? call({ try await self.transport.serverClock() }) {
            let skew = serverNow - (before + wallClock()) / 2
            update { $0.clockSkew = skew }
        }
        if self.server?.node != info.node { pullCursor = 0 }
        self.server = info
        lock.withLock { connectedNode = info.node }
        if let status = try? outbox.status() {
            let first = (status.failing + status.deadLetters).map(\.sequence).min()
            update {
                $0.acknowledgedThrough = first.map { min(status.pushedThrough, $0 - 1) } ?? status.pushedThrough
                $0.failing = status.failing.count + status.deadLetters.count
            }
        }
        logger.info("sync: connected to \(info.description) (schema \(info.schemaVersion))")
    }

    /// Pushes while the outbox has operations due.
    private func pushAll() throws {
        guard let server else { return }
        while !shouldStop {
            let highest = localHighest.load(ordering: .acquiring)
            let due = lock.withLock { nextFailureDue.map { $0 <= wallClock() } ?? false }
            guard highest > pushedHighest || due else { return }
            let batch = try outbox.next(limit: pushSize, now: wallClock(), backoff: { [config] in Self.backoff($0, config) })
            lock.withLock { nextFailureDue = nil }
            guard !batch.isEmpty else {
                // Nothing committed above what was pushed yet (the flush comes), or no retry due.
                let status = try outbox.status()
                pushedHighest = max(pushedHighest, status.pushedThrough)
                if let soonest = status.failing.map({ $0.lastAttemptAt + Int64(backoff($0.attempts).milliseconds) }).min() {
                    lock.withLock { nextFailureDue = min(nextFailureDue ?? soonest, soonest) }
                }
                return
            }
            try push(batch[...], to: server)
            pushedHighest = max(pushedHighest, batch.map(\.seq).max() ?? 0)
            // A full batch: a backlog (back online, a large document's first push); the next
            // one is twice as large, up to `join_batch_size`.
            pushSize = batch.count == pushSize ? min(pushSize * 2, config.joinBatchSize) : config.batchSize
        }
    }

    /// Pushes `batch`; a refused batch is split until the refused operations are alone.
    private func push(_ batch: ArraySlice<LoggedOperation>, to server: SyncServerInfo) throws {
        do {
            let receipt = try call { try await self.transport.push(Array(batch)) }
            let acknowledgedThrough = try outbox.acknowledge(Array(batch), server: server, now: wallClock())
            update {
                $0.pushes += 1
                $0.pushedOperations += receipt.inserted
                $0.duplicatesIgnored += receipt.duplicates
                $0.lastPushAt = self.wallClock()
                if $0.firstPushAt == nil { $0.firstPushAt = $0.lastPushAt }
                $0.acknowledgedThrough = max($0.acknowledgedThrough, acknowledgedThrough)
            }
            inbox.acknowledge(through: acknowledgedThrough)
        } catch let error as SyncError where error.kind == .rejected {
            guard batch.count > 1 else {
                let operation = batch.first!
                let dead = try outbox.refuse(operation, error: error.message, maxAttempts: config.maxAttempts, now: wallClock())
                let failing = (try? outbox.status()).map { $0.failing.count + $0.deadLetters.count }
                update { $0.refusals += 1; $0.failing = failing ?? $0.failing; if dead { $0.deadLetters += 1 } }
                lock.withLock { nextFailureDue = nextFailureDue ?? 0 }
                logger.warning("sync: the server refused operation \(operation.seq) (\(operation.kind))\(dead ? ": a dead letter now" : ""): \(error.message)")
                return
            }
            // In sequence order: the lower half settles first.
            let middle = batch.startIndex + batch.count / 2
            try push(batch[..<middle], to: server)
            try push(batch[middle...], to: server)
        }
    }

    /// Pulls pages until the server has no more (true), or the tick thread has not taken
    /// enough of the last ones yet (false: the rest stays on the server until then).
    private func pullAll(told: Bool) throws -> Bool {
        var more = true
        var first = true
        while more && !shouldStop {
            guard inbox.backlog < config.joinBatchSize * 2 else { return false }
            let page = try call { [startClock, node, pullCursor, pageSize] in
                try await self.transport.pull(excluding: node, clock: startClock, after: pullCursor, limit: pageSize)
            }
            lastPull = .now
            inbox.deliver(page.operations)
            pullCursor = max(pullCursor, page.cursor)
            more = page.hasMore
            let catching = more || (pageSize > config.pullBatchSize && !page.operations.isEmpty)
            update {
                $0.pulls += 1
                if first && told { $0.notifiedPulls += 1 }
                $0.pulledOperations += page.operations.count
                if catching && !$0.catchingUp { $0.catchingUp = true; $0.catchUpPulled = 0 }
                if $0.catchingUp { $0.catchUpPulled += page.operations.count }
                if !more { $0.catchingUp = false }
            }
            first = false
            // A full page: the next one twice as large (a joining device's round trips
            // fall fast); back to the small page once caught up.
            pageSize = more ? min(pageSize * 2, config.joinBatchSize) : config.pullBatchSize
        }
        try outbox.notePull(now: wallClock())
        return !more
    }

    // MARK: Helpers

    private func update(_ body: (inout State) -> Void) {
        lock.withLock { body(&current) }
    }

    /// Waits `duration`, or less if woken or stopped (a condition wait: no polling).
    private func pause(_ duration: Duration) {
        let deadline = Date(timeIntervalSinceNow: duration.seconds)
        waker.lock()
        let seen = wakeCount
        while wakeCount == seen && !shouldStop && waker.wait(until: deadline) {}
        waker.unlock()
    }

    private func signalWaker() {
        waker.lock()
        wakeCount += 1
        waker.broadcast()
        waker.unlock()
    }

    private func backoff(_ attempts: Int) -> Duration { Self.backoff(attempts, config) }

    static func backoff(_ attempts: Int, _ config: SyncConfig) -> Duration {
        guard attempts > 0 else { return .zero }
        let factor = Double(1 << min(attempts - 1, 30))
        return min(config.retryInitialBackoff * factor, config.retryMaxBackoff)
    }

    /// Runs an async call from this thread, waiting at most `request_timeout_ms`.
    private func call<T: Sendable>(toServer: Bool = true, _ body: @escaping @Sendable () async throws -> T) throws -> T {
        if toServer { update { $0.requests += 1 } }
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, any Error>?
        let task = Task(executorPreference: executor) {
            do { result = .success(try await body()) } catch { result = .failure(error) }
            done.signal()
        }
        guard done.wait(timeout: .now() + config.requestTimeout.seconds) == .success else {
            task.cancel()
            blocking { await self.transport.disconnect() }
            throw SyncError(.unreachable, "no answer within \(Int(config.requestTimeout.milliseconds)) ms")
        }
        return try result!.get()
    }

    private func blocking(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: executor) { await body(); done.signal() }
        _ = done.wait(timeout: .now() + config.requestTimeout.seconds)
    }
}

/// What the network says, from a monitor (``NetworkMonitor``: NetworkManager over D-Bus).
public enum Connectivity: String, Sendable, Codable {
    case online, offline, unknown
}

/// A source of ``Connectivity`` the sync client reads from its thread.
public protocol ConnectivitySource: AnyObject, Sendable {
    var connectivity: Connectivity { get }
    /// Moves whenever ``connectivity`` changes.
    var changeCount: Int { get }
}

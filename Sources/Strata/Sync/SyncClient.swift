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
@usableFromInline final class SyncClient: @unchecked Sendable {
    typealias State = SyncState

    // @unchecked Sendable: the mutable state is guarded by `lock`, or atomic; the rest is
    // immutable, or touched only by the sync thread (`server`, `pullCursor`, `failures`).
    let transport: any SyncTransport
    let outbox: SyncOutbox
    @usableFromInline let inbox: SyncInbox
    let config: SyncConfig
    let node: NodeID
    /// The vector clock when the sync started: a pull asks for what lies above it.
    let startClock: [NodeID: Int64]
    let network: (any ConnectivitySource)?
    let wallClock: @Sendable () -> Int64
    let logger: Logger

    let lock = Lock()
    var stopping = false
    var thread: Thread?
    let finished = DispatchSemaphore(value: 0)
    /// Where the transport's async calls run (not the shared cooperative pool).
    let executor = SyncExecutor(name: "strata.sync.io")
    var current = State()
    /// The highest sequence this replica has appended (the tick thread sets it): the
    /// outbox is only read when it moved past what was pushed, or a retry is due.
    let localHighest = Atomic<Int64>(0)
    /// Wakes a pause early: ``wake()`` and ``stop()`` (`wakeCount` is guarded by it).
    let waker = NSCondition()
    var wakeCount = 0

    var server: SyncServerInfo?
    var pullCursor: Int64 = 0
    /// The next page's size: `pull_batch_size`, doubled while pages come back full.
    var pageSize: Int
    /// The next push's size: `batch_size`, doubled while batches are full.
    var pushSize: Int
    /// The server said the document changed (or listening began): pull at the next pass.
    let pullDue = Atomic<Bool>(false)
    /// The transport listens for the server's news (set from the listener's events).
    let listening = Atomic<Bool>(false)
    var listenerStarted = false
    var pushedHighest: Int64 = 0
    var nextFailureDue: Int64? = 0
    var consecutiveFailures = 0
    /// When to try pushing again after the server refused this device as a reader.
    var readOnlyUntil: ContinuousClock.Instant?

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

    var state: State { lock.withLock { current } }

    /// The server's node id once connected (its acknowledgements are recorded under it).
    var serverNode: NodeID? { lock.withLock { connectedNode } }
    var connectedNode: NodeID?
    var shouldStop: Bool { lock.withLock { stopping } }

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

    func run() {
        var retryAt: ContinuousClock.Instant?
        var nextPull = ContinuousClock.now
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
                    // Listening was lost since the last pull: poll at the short interval again.
                    nextPull = min(nextPull, .now + config.pullInterval)
                }
                consecutiveFailures = 0
                update { $0.online = true }
            } catch {
                let failure = error as? SyncError ?? SyncError(.failed, "\(error)")
                if failure.kind == .misconfigured {
                    // Trying again cannot help: said once, and the session ends (the host may
                    // start another once the configuration is fixed).
                    logger.error("sync: stopped: \(failure.message)")
                    update {
                        $0.online = false
                        $0.lastError = "stopped: \(failure.description)"
                    }
                    try? outbox.noteError("stopped: \(failure.description)", now: wallClock())
                    break
                }
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

    func connectIfNeeded() throws {
        guard server == nil else { return }
        let info = try call { try await self.transport.connect() }
        let before = wallClock()
        if let serverNow = try? call({ try await self.transport.serverClock() }) {
            let skew = serverNow - (before + wallClock()) / 2
            update { $0.clockSkew = skew }
            if let ahead = state.secondsAhead(of: config.maxClockAhead) {
                logger.warning("sync: this device's clock is \(Int(ahead)) s ahead of the server's, more than [sync] max_clock_ahead_secs (\(Int(config.maxClockAhead.seconds))): the other devices hold its edits until their clocks get there, and then those edits win over what they wrote meanwhile")
            }
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

    // MARK: Helpers

    func update(_ body: (inout State) -> Void) {
        lock.withLock { body(&current) }
    }

    /// Waits `duration`, or less if woken or stopped (a condition wait: no polling).
    func pause(_ duration: Duration) {
        let deadline = Date(timeIntervalSinceNow: duration.seconds)
        waker.lock()
        let seen = wakeCount
        while wakeCount == seen && !shouldStop && waker.wait(until: deadline) {}
        waker.unlock()
    }

    func signalWaker() {
        waker.lock()
        wakeCount += 1
        waker.broadcast()
        waker.unlock()
    }

    func backoff(_ attempts: Int) -> Duration { Self.backoff(attempts, config) }

    static func backoff(_ attempts: Int, _ config: SyncConfig) -> Duration {
        config.backoff.wait(after: attempts)
    }
}

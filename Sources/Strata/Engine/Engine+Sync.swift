import Foundation

/// The sync with a server (`Sources/Strata/Sync`): the outbox pushed, other devices'
/// operations pulled and applied. Tick thread, except where a member says otherwise.
///
/// ```swift
/// let transport = try PostgresTransport(url: config.sync.server, document: config.sync.document)
/// engine.startSync(transport: transport, network: NetworkMonitor(config: config.sync, logger: logger)) { op in
///     canvas.apply(op)        // a peer's operation, already in the log: make the world agree
/// }
/// ```
///
/// Conflicts: every device applies an operation only if it is newer than the last one
/// applied to the same thing, in ``LoggedOperation/causallyPrecedes(_:)`` order (hybrid
/// timestamp, then node id), which every device computes the same way whatever order
/// the operations arrived in: the last writer wins, everywhere. The hook decides what
/// "the same thing" is (``OperationStamp`` helps).
extension Engine {
    /// Starts pushing this document's operations to `transport` and pulling the other
    /// devices', on a thread of its own. Each pulled operation is logged (critical, as
    /// ``receiveOperation(_:)``: duplicates are dropped there) and, when new, handed to
    /// `apply` on the tick thread at an end of tick. A shutdown stops it.
    public func startSync(transport: any SyncTransport, network: (any ConnectivitySource)? = nil,
                          applying apply: @escaping (LoggedOperation) -> Void) {
        owner.check("Engine")
        guard syncClient == nil, !isShutDown else { return }
        let outbox = SyncOutbox(lane: WriterLane(buffer: buffer), node: nodeID, server: config.sync.server)
        let client = SyncClient(transport: transport, outbox: outbox, inbox: SyncInbox(), config: config.sync, node: nodeID,
                                clock: vectorClock, localHighest: world.operationLog.nextSequence - 1, network: network,
                                wallClock: options.wallClock, logger: logger)
        syncApply = apply
        syncClient = client
        syncChangesSeen = client.inbox.changes.load(ordering: .relaxed)
        metricsExporter?.setSyncSource { (client.state, (try? outbox.status().pending) ?? 0) }
        buffer.setOperationsListener { [weak client, nodeID] operations in
            client?.committed(operations.lazy.filter { $0.node == nodeID }.map(\.seq).max())
        }
        client.start()
    }

    /// The sync's state (online, counts), as it was when it stopped after a shutdown; nil
    /// if it never ran.
    public var sync: SyncState? { syncClient?.state ?? stoppedSyncState }

    /// The outbox, the dead letters, the last push and pull (committed state).
    public func syncStatus() throws -> SyncStatus {
        try SyncOutbox(lane: WriterLane(buffer: buffer), node: nodeID, server: config.sync.server).status()
    }

    /// The operations the next push would send, at most `limit` (committed ones only):
    /// refused ones whose retry is due, then the oldest not pushed. A row of the log that
    /// does not read becomes a dead letter here, as in a push. Any thread.
    public func nextSyncBatch(limit: Int) throws -> [LoggedOperation] {
        let config = config.sync
        return try SyncOutbox(lane: WriterLane(buffer: buffer), node: nodeID, server: config.server)
            .next(limit: limit, now: options.wallClock(), backoff: { SyncClient.backoff($0, config) }).operations
    }

    /// Dead letters are pushed again (their attempts start over). Returns how many.
    @discardableResult
    public func retrySyncDeadLetters() throws -> Int {
        let count = try SyncOutbox(lane: WriterLane(buffer: buffer), node: nodeID, server: config.sync.server).retryDeadLetters()
        syncClient?.wake()
        return count
    }

    /// Takes what the sync brought (every end of tick; one atomic load when nothing did):
    /// at most ``SyncInbox/perTick`` operations, in slices, and no further slice once
    /// ``syncApplyBudget`` is spent, so that a large pull is applied over several ticks,
    /// none of them long.
    func pollSync(_ client: SyncClient) {
        client.localHighest.store(world.operationLog.nextSequence - 1, ordering: .relaxed)
        let changes = client.inbox.changes.load(ordering: .acquiring)
        guard changes != syncChangesSeen else { return }
        let started = MonotonicClock().now()
        var taken = 0
        while true {
            let (operations, acknowledged, more) = client.inbox.take(limit: Self.syncApplySlice)
            let count = operations.count
            taken += count
            receivePulled(operations, handing: syncApply)
            if let acknowledged, let server = client.serverNode {
                recordAcknowledgement(from: server, clock: [nodeID: acknowledged])
            }
            if !more {
                syncChangesSeen = changes
                return
            }
            // A large pull: room for the entities it may bring, at once rather than by regrowing.
            if taken == count { world.reserveEntities(client.inbox.backlog) }
            // Operations left (a large pull): the next end of tick takes more. What was applied
            // is drained in parts too: this tick's flush takes what is queued so far.
            if world.replicas.appliedSinceDrain >= Self.syncFlushEvery {
                scheduler.request(.networkOperations, by: clock.now())
                return
            }
            if taken >= SyncInbox.perTick || MonotonicClock().now().duration(since: started) >= Self.syncApplyBudget { return }
        }
    }

    /// ``receiveOperation(_:)`` for a slice of pulled operations, with the bookkeeping done
    /// once for the slice (the critical tier, the vector-clock trigger, the flush event):
    /// each logged one is then applied (a replicated component's) or handed to the hook.
    @discardableResult
    func receivePulled(_ operations: consuming [LoggedOperation], handing hook: ((LoggedOperation) -> Void)?) -> Int {
        var logged = 0
        for index in operations.indices {
            world.prefetch(ahead: operations, of: index)
            if logReceived(operations.moveOut(at: index), handing: hook) != .duplicate { logged += 1 }
        }
        finishApplyingReplicated()
        if logged > 0 { noteReceived(logged) }
        return logged
    }

    /// Operations taken from the inbox at a time.
    static let syncApplySlice = 100
    /// Pulled values applied since the last critical drain past which the next end of tick
    /// drains them (a device joining a large document commits it in parts, none long to drain).
    static let syncFlushEvery = 500
    /// The time an end of tick spends on pulled operations before it leaves the rest to
    /// the next one (checked between slices).
    static let syncApplyBudget = Duration.microseconds(500)

    func stopSync() {
        guard let client = syncClient else { return }
        syncClient = nil
        metricsExporter?.setSyncSource(nil)
        buffer.setOperationsListener(nil)
        client.stop()
        stoppedSyncState = client.state
    }
}

import Logging

/// Replicated components (`Sources/Strata/Replication`): a component type that declares
/// `static var replication: Replication { .lastWriterWins }` is synced with no code
/// from the host. Its changes are logged as operations at the critical flush, pushed
/// and pulled like every operation, and applied here when they arrive; the host hears
/// what changed (``onReplicatedChange``). Tick thread.
///
/// ```swift
/// engine.onReplicatedChange = { change in canvas.redraw(change.entity) }
/// engine.startSync(transport: transport) { op in chat.show(op) }   // the host's own kinds only
/// ```
extension Engine {
    /// What this device did with replicated operations since it opened.
    public var replicationStatus: ReplicationStatus {
        owner.check("Engine")
        var status = world.replicas.status
        status.heldNow = world.heldCounts()
        return status
    }

    /// Copies the replication status into the metrics' snapshot when it moved (after a
    /// drain that logged, after pulled operations were applied): the exporter's thread
    /// reads it there, never the world.
    func publishReplicationStatus() {
        let status = world.replicas.status
        guard status != publishedReplication else { return }
        publishedReplication = status
        var published = status
        published.heldNow = world.heldCounts()
        recorder.update { $0.replication = published }
    }

    /// Sets up the world's replication after the open: the tombstones from the log, the
    /// interval and skew from the configuration, and every held value tried again (this
    /// build may know a type or a payload version the last one did not).
    func openReplication() {
        let delay = config.persistence.criticalFlushDelay
        world.tracker.replicateLeadNanoseconds = ((config.sync.replicateInterval ?? delay) - delay).nanoseconds
        world.replicas.maxSkewMilliseconds = Int64(config.sync.maxClockAhead.milliseconds)
        world.replicas.wallClock = options.wallClock
        do {
            world.replicas.tombstones = try store.readReplicaTombstones()
        } catch {
            logger.error("replication: the despawns in the log could not be read (\(error)); edits of despawned entities may come back")
        }
        let outcomes = world.releaseHeld()
        let applied = outcomes.filter { $0 == .applied }.count
        let held = outcomes.count - applied
        if applied > 0 { logger.info("replication: \(applied) held values applied at open") }
        if held > 0 { logger.warning("replication: \(held) values still held (\(world.heldCounts().sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")))") }
        world.replicas.changes.removeAll()
        let adopted = world.adoptUnstampedReplicatedValues()
        if adopted > 0 { logger.info("replication: \(adopted) values with no operation yet (a type that replicates since) will be logged") }
    }

    /// Applies what the replicated operations received so far staged, reports what could
    /// not be applied, and tells the host what changed. Runs after every operation
    /// received alone, after each pulled slice, and before a host's hook sees the world.
    func finishApplyingReplicated() {
        world.applyStaged()
        if !world.replicas.notices.isEmpty {
            for notice in world.replicas.notices { report(notice) }
            world.replicas.notices.removeAll(keepingCapacity: true)
        }
        deliverReplicatedChanges()
        publishReplicationStatus()
    }

    private func report(_ notice: ReplicaNotice) {
        switch notice.outcome {
        case .held(let reason):
            let count = world.replicas.status.held
            if count.nonzeroBitCount == 1 {   // the 1st, 2nd, 4th, 8th…: a storm is not a log flood
                logger.warning("replication: operation \(notice.node):\(notice.seq) held (\(reason)); \(count) held so far, kept with the entity")
            }
        case .malformed(let error):
            logger.error("replication: operation \(notice.node):\(notice.seq) does not parse (\(error)); kept in the log, not applied")
        default:
            break
        }
    }

    /// Hands the changes applied since the last call to the host's observer.
    func deliverReplicatedChanges() {
        guard !world.replicas.changes.isEmpty else { return }
        let changes = world.replicas.changes
        world.replicas.changes.removeAll(keepingCapacity: true)
        guard let observer = onReplicatedChange else { return }
        for change in changes { observer(change) }
    }

    /// Values held as stamped in the future whose time has come are applied (an end of
    /// tick that decides). Until then, a flush event waits for that time, so that a
    /// quiet tick thread still comes back for them.
    func releaseDueReplicatedValues(now: Instant) {
        guard let due = world.replicas.earliestFuture else { return }
        let wait = due - options.wallClock()
        guard wait <= 0 else {
            let deadline = now + .milliseconds(wait)
            if scheduler.eventDeadline.map({ $0 > deadline }) ?? true { scheduler.request(.networkOperations, by: deadline) }
            return
        }
        let applied = world.releaseHeld().filter { $0 == .applied }.count
        if applied > 0 { logger.info("replication: \(applied) values held as stamped in the future applied") }
        deliverReplicatedChanges()
        if world.replicas.earliestFuture != nil { releaseDueReplicatedValues(now: now) }
    }
}

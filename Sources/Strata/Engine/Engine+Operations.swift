/// The operation log: local operations appended, peers' operations
/// received, both critical work: committed within `critical_flush_delay_ms` with
/// `synchronous=FULL`, through the same write buffer and writer as components, in order.
/// The vector clock, derived from the log (and rebuilt from it at open), is written with
/// the first critical flush after `vector_clock_every_operations` operations or
/// `vector_clock_every_secs`, and with every app transition and shutdown: it never
/// costs a commit of its own.
///
/// Tick thread, like the world.
///
/// ```swift
/// let op = engine.appendOperation(kind: "shape.move", payload: bytes)   // seq 1, 2, 3… of this node
/// switch engine.receiveOperation(fromPeer) { case .duplicate: … }       // dedup by (node, seq)
/// engine.vectorClock[engine.nodeID]                                     // highest contiguous seq
/// ```
extension Engine {
    /// This replica's node id, stable across restarts.
    public var nodeID: NodeID { world.operationLog.node }

    /// Node → highest contiguous sequence logged.
    public var vectorClock: [NodeID: Int64] { world.operationLog.vectorClock }

    /// The missing sequences of each peer that has gaps (kept and reported, never filled in).
    public var operationGaps: [NodeID: [ClosedRange<Int64>]] { world.operationLog.gaps }

    /// Logs a local operation: the next sequence of this node, a new id and a hybrid
    /// timestamp. Written with the next critical flush.
    @discardableResult
    public func appendOperation(kind: String, payload: [UInt8]) -> LoggedOperation {
        owner.check("Engine")
        let operation = world.operationLog.append(kind: kind, payload: payload)
        world.tracker.noteCriticalWork(clock: world.clock)
        recordOperations(1, fromPeers: false)
        return operation
    }

    /// Logs a peer's operation, unless its (node, sequence) is logged already; one above
    /// a gap is logged and the gap reported (``operationGaps``). Peers' operations are
    /// flushed within the critical delay, with every tier (the specification, *Flush events*).
    /// A replicated component's operation is then applied to the world
    /// (`Engine+Replication.swift`).
    @discardableResult
    public func receiveOperation(_ operation: LoggedOperation) -> LoggedOperation.Receipt {
        owner.check("Engine")
        let receipt = logReceived(operation, handing: nil)
        if receipt != .duplicate {
            finishApplyingReplicated()
            noteReceived(1)
        }
        return receipt
    }

    /// ``receiveOperation(_:)`` for a batch of peers' operations, as a host's own transport
    /// brings them: each is logged, or found a duplicate, and applied or kept exactly as
    /// one at a time, but the bookkeeping is done once for the batch and replicated values
    /// of one type are decoded together. Returns how many were logged.
    @discardableResult
    public func receiveOperations(_ operations: consuming [LoggedOperation]) -> Int {
        owner.check("Engine")
        return receivePulled(consume operations, handing: nil)   // each moved into the log, not copied
    }

    /// Logs a peer's operation and, when it is new, applies it (a replicated component's)
    /// or hands it to `hook`. The bookkeeping is the caller's (``noteReceived(_:)``), and
    /// so is ``finishApplyingReplicated()``: a replicated value may be staged.
    /// The operation is moved into the log, not copied (a pull brings thousands).
    func logReceived(_ operation: consuming LoggedOperation, handing hook: ((LoggedOperation) -> Void)?) -> LoggedOperation.Receipt {
        let receipt = world.withOperationLog { $0.admit(operation) }
        guard receipt != .duplicate else { return receipt }
        if ReplicatedOperation.isReplicated(kind: operation.kind) {
            world.applyReplicated(operation)   // logs nothing itself: the log's order is kept
            var moving = Optional(consume operation)   // moved into the log through the closure
            world.withOperationLog { log in if let operation = moving.take() { log.queue(operation) } }
            return receipt
        } else {
            world.operationLog.queue(copy operation)   // before the hook, which may log operations of its own
            if let hook {
                finishApplyingReplicated()   // the hook sees the world as the operations before left it
                hook(operation)
            }
        }
        return receipt
    }

    /// `count` peers' operations were logged: critical work, flushed within the critical delay.
    func noteReceived(_ count: Int) {
        world.tracker.noteCriticalWork(clock: world.clock)
        recordOperations(count, fromPeers: true)
    }
}

extension Engine {
    /// Records that `peer` has every operation of each node through `clock[node]` (its
    /// vector clock, as it acknowledged it). Written with the next critical flush; with
    /// `[operation_log] retention = "acknowledged"`, operations every known peer has
    /// acknowledged (and older than `retention_min_age_secs`) are dropped then. A peer
    /// becomes known with its first acknowledgement; an operation one of them has not
    /// acknowledged is never dropped.
    public func recordAcknowledgement(from peer: NodeID, clock: [NodeID: Int64]) {
        owner.check("Engine")
        world.operationLog.acknowledge(from: peer, clock: clock)
        world.tracker.noteCriticalWork(clock: world.clock)
    }
}

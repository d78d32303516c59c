import Foundation

/// The operation log as the tick thread sees it: this replica's node id and next
/// sequence number, the hybrid logical clock, the vector clock, the gaps, and the
/// operations waiting for the next critical flush.
///
/// Owned by the tick thread (inside ``World``; the engine's `appendOperation` and
/// `receiveOperation` feed it). The log itself lives in the database (`operation_log`):
/// nothing here grows with it, beyond the sequence numbers received out of order.
///
/// Invariants:
/// 1. `vectorClock[n]` is the highest `s` such that operations `1…s` of node `n` are all
///    logged (committed, waiting in `pending` for the next critical drain, or dropped by
///    retention once every known peer had them).
/// 2. `beyond[n]` holds the sequences of `n` logged above `vectorClock[n] + 1`: the gaps
///    are what lies between.
/// 3. Operations are appended, never coalesced, and drained in the order they came.
/// 4. The vector clock rows drained with a batch claim nothing but operations in that
///    batch or an earlier one (the clock is read after the batch's operations are taken).
public final class OperationLog {
    // Its storage is never borrowed across a call out of this class: its accesses cannot
    // overlap, so the dynamic exclusivity checks are skipped (a pull admits thousands of
    // operations a tick, and they cost more than the admitting).

    /// This replica.
    public let node: NodeID
    /// Node → highest contiguous sequence logged.
    @exclusivity(unchecked) public private(set) var vectorClock: [NodeID: Int64]
    /// Sequences logged above a gap, per node.
    @exclusivity(unchecked) private var beyond: [NodeID: Set<Int64>] = [:]
    @exclusivity(unchecked) private var clock: HybridLogicalClock
    @exclusivity(unchecked) private var ids = TimeOrderedIDs()
    /// Operations waiting for the next critical drain, in order.
    @exclusivity(unchecked) private(set) var pending: [LoggedOperation] = []
    /// Nodes whose vector-clock entry moved since the clock was last drained.
    @exclusivity(unchecked) private var clockChanged: Set<NodeID> = []
    /// The node last looked up in `vectorClock`, with its entry (``clockEntry(of:)``).
    @exclusivity(unchecked) private var lastEntry: (node: NodeID, index: [NodeID: Int64].Index)?
    /// The node last added to `clockChanged` (nil once it is drained).
    @exclusivity(unchecked) private var lastClockChanged: NodeID?
    /// Acknowledgements received since the last critical drain: peer → node → sequence.
    private var pendingAcks: [NodeID: [NodeID: Int64]] = [:]
    private let wallClock: @Sendable () -> Int64
    /// `[sync] max_clock_ahead_secs` in milliseconds: how far ahead of the wall clock a
    /// peer's timestamp may be and still move this replica's clock.
    var maxSkewMilliseconds: Int64 = 300_000 { didSet { lastSkewBound = .min } }
    @exclusivity(unchecked) private var lastSkewBound: Int64 = .min

    init(node: NodeID, vectorClock: [NodeID: Int64] = [:], beyond: [NodeID: Set<Int64>] = [:], highestOwn: Int64 = 0,
         lastTimestamp: HybridTimestamp = HybridTimestamp(rawValue: 0),
         clockToWrite: Set<NodeID> = [], wallClock: @escaping @Sendable () -> Int64 = { unixMilliseconds() }) {
        self.node = node
        self.vectorClock = vectorClock
        self.beyond = beyond
        self.highestOwn = highestOwn
        self.clock = HybridLogicalClock(last: lastTimestamp)
        self.clockChanged = clockToWrite
        self.wallClock = wallClock
    }

    /// The highest sequence this replica has used, logged or not (a parked operation's, a
    /// lost one's: `Store.skipLostOwnSequences`): the next one goes above it.
    @exclusivity(unchecked) private var highestOwn: Int64

    /// The sequence number the next local operation gets: above every one this replica used.
    public var nextSequence: Int64 { max(vectorClock[node] ?? 0, highestOwn) + 1 }
    /// The highest sequence a log may hold: one past it, read from a file or a server, is
    /// damage, never counted on (so no clock overflows counting on from it).
    static let highestSequence: Int64 = 1 << 62

    /// The latest timestamp an operation read from a file may carry: the year 4000. A
    /// later one (a damaged row) is not counted when the clock resumes: a clock started
    /// there would run out of numbers.
    static let latestPlausibleTimestamp = HybridTimestamp(milliseconds: 64_060_588_800_000, counter: 0xFFFF).rawValue

    /// Logs a local operation: the next sequence of this node, a new id, a timestamp.
    func append(kind: String, payload: [UInt8]) -> LoggedOperation {
        let wall = wallClock()
        let seq = nextSequence
        // Made from the node and the sequence, so the row need not store it (`StoredOperation`).
        let operation = LoggedOperation(id: StoredOperation.derivedID(node: node, seq: seq) ?? ids.make(milliseconds: wall), node: node, seq: seq,
                                        timestamp: clock.next(wallMilliseconds: wall), kind: kind, payload: payload)
        highestOwn = operation.seq
        log(operation)
        return operation
    }

    /// Logs a peer's operation unless its (node, sequence) is logged already.
    func receive(_ operation: consuming LoggedOperation) -> LoggedOperation.Receipt {
        let receipt = admit(operation)
        if receipt != .duplicate { pending.append(operation) }
        return receipt
    }

    /// Counts a peer's operation as logged unless its (node, sequence) is logged already
    /// (the clocks move); the caller then queues it (``queue(_:)``), after using it.
    func admit(_ operation: borrowing LoggedOperation) -> LoggedOperation.Receipt {
        precondition(operation.seq > 0, "operation sequences start at 1")
        let entry = clockEntry(of: operation.node)   // `count` writes through it
        let contiguous = entry.map { vectorClock.values[$0] } ?? 0
        if operation.seq <= contiguous || (!beyond.isEmpty && beyond[operation.node]?.contains(operation.seq) == true) {
            return .duplicate
        }
        // A timestamp too far ahead of this clock (a peer's clock set wrong) is logged but
        // not observed: every later local operation would be stamped that far ahead.
        if operation.timestamp > clock.last, operation.timestamp.milliseconds <= skewBound(operation.timestamp.milliseconds) {
            clock.observe(operation.timestamp)
        }
        count(node: operation.node, seq: operation.seq, contiguous: contiguous, entry: entry)
        return operation.seq == contiguous + 1 ? .accepted : .acceptedAfterGap
    }

    /// The latest millisecond a peer's timestamp may carry and still move the clock: the
    /// wall clock plus the skew, read again only when `milliseconds` is past the last
    /// reading (it only grows, so a stale one is only too strict; a pull of thousands
    /// reads the clock a few times, not once each).
    private func skewBound(_ milliseconds: Int64) -> Int64 {
        if milliseconds > lastSkewBound { lastSkewBound = wallClock() &+ maxSkewMilliseconds }
        return lastSkewBound
    }

    /// Queues an operation ``admit(_:)`` accepted for the next critical drain.
    func queue(_ operation: consuming LoggedOperation) {
        pending.append(operation)
    }

    private func log(_ operation: consuming LoggedOperation) {
        count(node: operation.node, seq: operation.seq, contiguous: vectorClock[operation.node] ?? 0)
        pending.append(operation)
    }

    /// `n`'s entry in the vector clock, if it has one. A pull brings runs of one node: the
    /// last node's entry is kept, and its id is hashed once a run, not once an operation.
    /// (An index stays valid until a key is inserted, and the clock only ever gains keys.)
    private func clockEntry(of n: NodeID) -> [NodeID: Int64].Index? {
        if let last = lastEntry, last.node == n { return last.index }
        let entry = vectorClock.index(forKey: n)
        if let entry { lastEntry = (n, entry) }
        return entry
    }

    /// Moves the clocks for operation `seq` of node `n`, whose contiguous prefix is
    /// `contiguous`; `entry`: `n`'s in the vector clock, if it has one.
    private func count(node n: NodeID, seq: Int64, contiguous: Int64, entry: [NodeID: Int64].Index? = nil) {
        var contiguous = contiguous
        if seq == contiguous + 1 {
            contiguous += 1
            // Read before modifying: a modify access of a missing key allocates storage.
            if !beyond.isEmpty, beyond[n] != nil {
                while beyond[n]?.remove(contiguous + 1) != nil { contiguous += 1 }
                if beyond[n]?.isEmpty == true { beyond[n] = nil }
            }
            if let entry {
                vectorClock.values[entry] = contiguous
            } else {
                vectorClock[n] = contiguous
                lastEntry = nil   // an insertion may move every entry
            }
            // A pull brings runs of one node: its entry is marked once.
            if lastClockChanged != n {
                clockChanged.insert(n)
                lastClockChanged = n
            }
        } else {
            beyond[n, default: []].insert(seq)
        }
    }

    /// The missing sequences of each node that has any: between its contiguous prefix
    /// and the highest sequence logged.
    public var gaps: [NodeID: [ClosedRange<Int64>]] {
        var result: [NodeID: [ClosedRange<Int64>]] = [:]
        for (n, above) in beyond where !above.isEmpty {
            var ranges: [ClosedRange<Int64>] = []
            var next = (vectorClock[n] ?? 0) + 1
            for seq in above.sorted() {
                if seq > next { ranges.append(next ... seq - 1) }
                next = seq + 1
            }
            result[n] = ranges
        }
        return result
    }

    /// Moves the pending operations into `batch` (``BatchSection/operations``).
    func drainOperations(into batch: WriteBatch) {
        guard !pending.isEmpty else { return }
        if batch.operations.isEmpty {
            swap(&batch.operations, &pending)   // moved, not copied
        } else {
            batch.operations.append(contentsOf: pending)
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// Moves the vector clock's changed entries into `batch` (``BatchSection/vectorClock``),
    /// after the operations (see invariant 4).
    func drainClock(into batch: WriteBatch) {
        guard !clockChanged.isEmpty else { return }
        for n in clockChanged { batch.vectorClockRows[n] = vectorClock[n] }
        clockChanged.removeAll(keepingCapacity: true)
        lastClockChanged = nil
    }

    /// Moves the acknowledgements recorded into `batch` (``BatchSection/peerAcks``).
    func drainAcks(into batch: WriteBatch) {
        guard !pendingAcks.isEmpty else { return }
        for (peer, clock) in pendingAcks {
            for (node, seq) in clock { batch.peerAcks.append(PeerAck(peer: peer, node: node, seq: seq)) }
        }
        pendingAcks.removeAll()
    }

    /// Acknowledgements waiting for the next critical drain.
    var pendingAckCount: Int { pendingAcks.values.reduce(0) { $0 + $1.count } }

    /// Records that `peer` has every operation of each node up to `clock[node]`
    /// (acknowledgements only grow). Written with the next critical drain; retention
    /// drops what every known peer acknowledged.
    func acknowledge(from peer: NodeID, clock: [NodeID: Int64]) {
        for (node, seq) in clock where seq > (pendingAcks[peer]?[node] ?? 0) {
            pendingAcks[peer, default: [:]][node] = seq
        }
    }

    /// A logged operation whose row a commit rejected (``RejectedWrite``), written again
    /// with the next drain: it is in the clock already, so nothing else changes (a row
    /// logged meanwhile under its key is kept: the insert ignores a duplicate).
    func requeue(_ operation: LoggedOperation) {
        pending.append(operation)
    }

    /// Writes `node`'s vector-clock row with the next drain that carries the clock.
    func requeueClock(of node: NodeID) {
        if vectorClock[node] != nil { clockChanged.insert(node) }
    }
}

/// One component write: its new value, or `nil` for a removal.
@usableFromInline
struct ComponentWrite: Sendable {
    /// The entity's number in the file.
    var entity: EntityNumber
    /// The world's index for the type; the writer caches the row's `type_id` by it.
    var typeIndex: UInt32
    var typeName: String
    /// Spelled out, not `(any Component)?`: a `var` of that spelling starts as nil, and the
    /// initializer's store would be an assignment over it, through the runtime's generic
    /// witness of `Optional` (about 100 instructions a write, every write of every drain).
    var value: Optional<any Component>

    @usableFromInline
    init(entity: EntityNumber, typeIndex: UInt32, typeName: String, value: (any Component)?) {
        self.entity = entity
        self.typeIndex = typeIndex
        self.typeName = typeName
        self.value = value
    }
}

extension Array where Element == ComponentWrite {
    /// Room for `count` more writes, growing at least twofold: the drain reserves once per
    /// dirty column, and an exact size each time would copy every write so far each time.
    @inlinable
    mutating func reserve(atLeast count: Int) {
        if self.count + count > capacity { reserveCapacity(Swift.max(self.count + count, 2 * capacity)) }
    }
}

/// A spawned entity's row: its number in the file and its stable id.
struct EntityInsert: Sendable, Equatable {
    var number: EntityNumber
    var id: EntityID
}

/// How a batch's commit must reach the disk (the durability contract: `docs/specification.md`, *Durability*).
public enum Durability: Int, Sendable, Comparable, CustomStringConvertible {
    /// `synchronous=NORMAL`: survives a process crash at once, power loss after the next WAL sync.
    case normal = 0
    /// `synchronous=FULL`: the WAL is synced at commit, covering every frame before it.
    case full = 1

    public static func < (lhs: Durability, rhs: Durability) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { self == .full ? "FULL" : "NORMAL" }
}

/// The second stage of the write path: the coalesced writes of one flush, committed in ONE transaction.
///
/// Built on the tick thread by ``World/drain(_:into:at:)``, handed to the writer through
/// ``WriteBuffer``. Its rows are applied in ``BatchSection`` order (entity rows first, component
/// writes last); ``merge(newer:)`` keeps that order valid when batches that waited are combined.
///
/// A reusable buffer, so a class: the writer empties a committed batch (``reset()``)
/// and ``WriteBuffer`` gives it back to the tick thread to fill again, capacity and
/// all. Passing it along is one reference, never a copy of its arrays.
final class WriteBatch: @unchecked Sendable {
    // @unchecked Sendable: one thread owns a batch at a time. The tick thread fills it,
    // hands it over under WriteBuffer's lock and keeps no reference; the writer commits
    // it, empties it and hands it back the same way.
    init() {}

    private struct WriteKey: Hashable {
        var entity: EntityNumber
        var typeIndex: UInt32
    }

    // Filled through `inout` by the drain; never lent to user code and owned by one
    // thread at a time, so the dynamic exclusivity checks are skipped.
    /// Numbers of despawned entities.
    @exclusivity(unchecked) var entityDeletes: [EntityNumber] = []
    @exclusivity(unchecked) var entityInserts: [EntityInsert] = []
    @exclusivity(unchecked) var writes: [ComponentWrite] = []
    /// Settings set or removed, one per key.
    var settingWrites: [SettingWrite] = []
    /// Operations logged, in order (never coalesced), and the vector-clock entries that
    /// moved, as of the drain (``OperationLog``).
    var operations: [LoggedOperation] = []
    var vectorClockRows: [NodeID: Int64] = [:]
    /// Acknowledgements from peers (retention runs after them).
    var peerAcks: [PeerAck] = []
    /// Rows of `rejected_writes` the host replayed (their values are in this batch or a
    /// later one): deleted in this batch's transaction.
    var replayedRejections: [Int64] = []
    /// Requests the tick thread handed in to ride this batch's transaction (a job's
    /// `enqueueSoon`): run after every part, each in a savepoint of its own, and told
    /// once the batch commits (``World/ride(_:)``). Not rows: a batch split to isolate a
    /// rejected row hands them to the request lane instead (`Writer+Rejection.swift`).
    var riders: [WriterRequest] = []
    var durability: Durability = .normal
    var reasons = FlushReasonSet()
    /// Assigned by ``WriteBuffer``; a merged batch carries the newest.
    var sequence: UInt64 = 0
    /// Checkpoint right after committing (an app transition that may precede termination).
    var checkpointAfter = false
    /// When each tier in the batch was drained (the latest drain, once merged); nil if
    /// the tier is not in the batch. Two fields, not a dictionary: no allocation.
    var criticalDrainedAt: Instant?
    var derivedDrainedAt: Instant?

    /// The drain instants by tier, for observers.
    var drainedAt: [Tier: Instant] {
        var result: [Tier: Instant] = [:]
        result[.critical] = criticalDrainedAt
        result[.derived] = derivedDrainedAt
        return result
    }
    /// Component writes of newer batches merged into this one, in order, not yet folded
    /// into `writes` (``coalesce()``): a key may be in both, or here more than once.
    private(set) var mergedWrites: [ComponentWrite] = []
    /// `writes` may hold a key more than once, in order: rows logged ahead of a critical
    /// drain, then the drain's own (``World/logReplicatedChangesAhead()``). ``coalesce()``
    /// folds them as it folds a merge's.
    var writesMayRepeatKeys = false

    /// Empties the batch for reuse, keeping the arrays' capacity: a flush in steady state
    /// then fills storage that is already allocated (see ``WriteBuffer``'s spare).
    func reset() {
        for section in BatchSection.allCases { section.removeAll(in: self) }
        riders.removeAll()
        durability = .normal
        reasons = FlushReasonSet()
        sequence = 0
        checkpointAfter = false
        criticalDrainedAt = nil
        derivedDrainedAt = nil
    }

    /// Folds a later batch into this one, as if both had been committed in order.
    ///
    /// - An entity deleted by `newer` loses its writes here; if this batch inserted it,
    ///   the insert and the delete cancel out (it never reached the database).
    /// - A write in `newer` replaces this batch's write of the same key in place (a
    ///   component's, or a setting's). For component writes that happens in
    ///   ``coalesce()``, which the writer runs when it takes the batch: the merge only
    ///   sets them aside (`mergedWrites`), so that it costs the tick thread O(newer), not
    ///   O(this batch): no index of this batch's keys, no growth of its `writes`.
    ///   (A critical flush that lands while the writer has yet to take a derived batch
    ///   of 1,000 keys used to index those 1,000 keys under the hand-off's lock: 0.3 ms
    ///   on a tick of 0.04 ms, found by `strata bench` at N = 1k.)
    ///
    /// Memory stays bounded by the number of distinct keys, however many batches merge:
    /// once the writes set aside outnumber the others (and a floor), the merge coalesces
    /// them on the spot, an amortized O(1) per write.
    func merge(newer: WriteBatch) {
        // The newer batch's despawns first: they take this batch's rows of those entities.
        let cancelled = newer.entityDeletes.isEmpty ? [] : forget(deletedBy: newer.entityDeletes)
        for section in BatchSection.allCases { section.merge(newer, into: self, cancelledInserts: cancelled) }
        riders.append(contentsOf: newer.riders)

        durability = max(durability, newer.durability)
        checkpointAfter = checkpointAfter || newer.checkpointAfter
        criticalDrainedAt = [criticalDrainedAt, newer.criticalDrainedAt].compactMap { $0 }.max()
        derivedDrainedAt = [derivedDrainedAt, newer.derivedDrainedAt].compactMap { $0 }.max()
        reasons.formUnion(newer.reasons)
        sequence = max(sequence, newer.sequence)
    }

    /// A batch of this many rows or more is a bulk batch (the first save of a large
    /// world): it commits through a rollback journal, its new entities' components go
    /// straight into base rows (`Writer+Bulk.swift`, `SegmentAppender`).
    static let bulkRows = 65_536

    var isBulk: Bool { rowCount >= Self.bulkRows }

    /// Removes this batch's inserts and writes of the entities `deleted` (a newer batch
    /// despawned them); returns the inserts removed (those entities never reach the file).
    private func forget(deletedBy deleted: [EntityNumber]) -> Set<EntityNumber> {
        let deleted = Set(deleted)
        var cancelled = Set<EntityNumber>()
        entityInserts.removeAll { insert in
            guard deleted.contains(insert.number) else { return false }
            cancelled.insert(insert.number)
            return true
        }
        writes.removeAll { deleted.contains($0.entity) }
        mergedWrites.removeAll { deleted.contains($0.entity) }
        return cancelled
    }

    /// Sets `newer`'s component writes aside for ``coalesce()``, or coalesces on the spot
    /// once they outnumber the others (``merge(newer:)``).
    func setAside(writesOf newer: WriteBatch) {
        guard !newer.writes.isEmpty || !newer.mergedWrites.isEmpty else { return }
        mergedWrites.append(contentsOf: newer.writes)
        mergedWrites.append(contentsOf: newer.mergedWrites)
        if mergedWrites.count > max(writes.count, Self.mergedWritesFloor) { coalesce() }
    }

    /// Empties the writes a merge set aside (``reset()``).
    func dropSetAsideWrites() {
        mergedWrites.removeAll(keepingCapacity: true)
        writesMayRepeatKeys = false
    }

    /// Writes a merge sets aside for ``coalesce()`` however few writes came before.
    static let mergedWritesFloor = 4096

    /// Leaves one write per key: the first position of the key, with its newest value,
    /// exactly as if each merge had replaced in place. O(writes) with one dictionary;
    /// nothing to do unless a merge set writes aside or a drain took rows logged ahead. Run by the thread that owns the
    /// batch: the writer, as it takes a batch from the hand-off.
    func coalesce() {
        guard !mergedWrites.isEmpty || writesMayRepeatKeys else { return }
        writesMayRepeatKeys = false
        writes.append(contentsOf: mergedWrites)
        mergedWrites.removeAll(keepingCapacity: true)
        var position = [WriteKey: Int](minimumCapacity: writes.count)
        var kept = 0
        for i in writes.indices {
            let key = WriteKey(entity: writes[i].entity, typeIndex: writes[i].typeIndex)
            if let first = position[key] {
                writes[first] = writes[i]
            } else {
                position[key] = kept
                if kept != i { writes[kept] = writes[i] }
                kept += 1
            }
        }
        writes.removeLast(writes.count - kept)
    }
}

/// One component write: its new value, or `nil` for a removal.
@usableFromInline
struct ComponentWrite: Sendable {
    /// The entity's number in the file.
    var entity: EntityNumber
    /// The world's index for the type; the writer caches the row's `type_id` by it.
    var typeIndex: UInt32
    var typeName: String
    var value: (any Component)?

    @usableFromInline
    init(entity: EntityNumber, typeIndex: UInt32, typeName: String, value: (any Component)?) {
        self.entity = entity
        self.typeIndex = typeIndex
        self.typeName = typeName
        self.value = value
    }
}

/// A spawned entity's row: its number in the file and its stable id.
struct EntityInsert: Sendable, Equatable {
    var number: EntityNumber
    var id: EntityID
}

/// How a batch's commit must reach the disk (DESIGN.md, durability contract).
public enum Durability: Int, Sendable, Comparable, CustomStringConvertible {
    /// `synchronous=NORMAL`: survives a process crash at once, power loss after the next WAL sync.
    case normal = 0
    /// `synchronous=FULL`: the WAL is synced at commit, covering every frame before it.
    case full = 1

    public static func < (lhs: Durability, rhs: Durability) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { self == .full ? "FULL" : "NORMAL" }
}

/// Layer 2 of RFC 0002: the coalesced writes of one flush, committed in ONE transaction.
///
/// Built on the tick thread by ``World/drain(_:into:at:)``, handed to the writer through
/// ``WriteBuffer``. Applied in this order: entity deletes, entity inserts, settings,
/// operations and the vector clock, component writes. ``merge(newer:)`` keeps that order valid when batches that waited are combined.
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
    /// Position of each write, built on first merge.
    private var writeIndex: [WriteKey: Int]?

    var isEmpty: Bool {
        entityDeletes.isEmpty && entityInserts.isEmpty && writes.isEmpty && settingWrites.isEmpty
            && operations.isEmpty && vectorClockRows.isEmpty && peerAcks.isEmpty && replayedRejections.isEmpty
    }

    /// Empties the batch for reuse, keeping the arrays' capacity: a flush in steady state
    /// then fills storage that is already allocated (see ``WriteBuffer``'s spare).
    func reset() {
        entityDeletes.removeAll(keepingCapacity: true)
        entityInserts.removeAll(keepingCapacity: true)
        writes.removeAll(keepingCapacity: true)
        settingWrites.removeAll(keepingCapacity: true)
        operations.removeAll(keepingCapacity: true)
        vectorClockRows.removeAll(keepingCapacity: true)
        peerAcks.removeAll(keepingCapacity: true)
        replayedRejections.removeAll()
        durability = .normal
        reasons = FlushReasonSet()
        sequence = 0
        checkpointAfter = false
        criticalDrainedAt = nil
        derivedDrainedAt = nil
        writeIndex = nil
    }
    var rowCount: Int {
        entityDeletes.count + entityInserts.count + writes.count + settingWrites.count + operations.count + vectorClockRows.count
            + peerAcks.count + replayedRejections.count
    }

    /// Folds a later batch into this one, as if both had been committed in order.
    ///
    /// - An entity deleted by `newer` loses its writes here; if this batch inserted it,
    ///   the insert and the delete cancel out (it never reached the database).
    /// - A write in `newer` replaces this batch's write of the same key in place (a
    ///   component's, or a setting's).
    /// Memory stays bounded by the number of distinct keys, however many batches merge.
    func merge(newer: WriteBatch) {
        if !newer.entityDeletes.isEmpty {
            let deleted = Set(newer.entityDeletes)
            var cancelled = Set<EntityNumber>()
            entityInserts.removeAll { insert in
                guard deleted.contains(insert.number) else { return false }
                cancelled.insert(insert.number)
                return true
            }
            let before = writes.count
            writes.removeAll { deleted.contains($0.entity) }
            if writes.count != before { writeIndex = nil }
            entityDeletes.append(contentsOf: newer.entityDeletes.filter { !cancelled.contains($0) })
        }
        entityInserts.append(contentsOf: newer.entityInserts)

        var index = writeIndex ?? Dictionary(
            uniqueKeysWithValues: writes.indices.map { (WriteKey(entity: writes[$0].entity, typeIndex: writes[$0].typeIndex), $0) })
        for write in newer.writes {
            let key = WriteKey(entity: write.entity, typeIndex: write.typeIndex)
            if let i = index[key] {
                writes[i] = write
            } else {
                index[key] = writes.count
                writes.append(write)
            }
        }
        writeIndex = index
        for write in newer.settingWrites {
            if let i = settingWrites.firstIndex(where: { $0.key == write.key }) {
                settingWrites[i] = write
            } else {
                settingWrites.append(write)
            }
        }

        operations.append(contentsOf: newer.operations)
        vectorClockRows.merge(newer.vectorClockRows) { _, newest in newest }
        peerAcks.append(contentsOf: newer.peerAcks)   // applied as a maximum: order does not matter
        replayedRejections.append(contentsOf: newer.replayedRejections)

        durability = max(durability, newer.durability)
        checkpointAfter = checkpointAfter || newer.checkpointAfter
        criticalDrainedAt = [criticalDrainedAt, newer.criticalDrainedAt].compactMap { $0 }.max()
        derivedDrainedAt = [derivedDrainedAt, newer.derivedDrainedAt].compactMap { $0 }.max()
        reasons.formUnion(newer.reasons)
        sequence = max(sequence, newer.sequence)
    }
}

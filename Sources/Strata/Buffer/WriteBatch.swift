/// One component row to write: its new value, or `nil` to delete the row.
@usableFromInline
struct ComponentWrite: Sendable {
    var entity: EntityID
    /// The world's index for the type; the writer caches the row's `type_id` by it.
    var typeIndex: UInt32
    var typeName: String
    var value: (any Component)?
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
/// Built on the tick thread by ``World/drain(_:into:)``, handed to the writer through
/// ``WriteBuffer``. Applied in this order: entity deletes, entity inserts, component
/// writes. ``merge(newer:)`` keeps that order valid when batches that waited are combined.
struct WriteBatch: Sendable {
    private struct WriteKey: Hashable {
        var entity: EntityID
        var typeIndex: UInt32
    }

    var entityDeletes: [EntityID] = []
    var entityInserts: [EntityID] = []
    var writes: [ComponentWrite] = []
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

    var isEmpty: Bool { entityDeletes.isEmpty && entityInserts.isEmpty && writes.isEmpty }
    var rowCount: Int { entityDeletes.count + entityInserts.count + writes.count }

    /// Folds a later batch into this one, as if both had been committed in order.
    ///
    /// - An entity deleted by `newer` loses its writes here; if this batch inserted it,
    ///   the insert and the delete cancel out (it never reached the database).
    /// - A write in `newer` replaces this batch's write of the same key in place.
    /// Memory stays bounded by the number of distinct keys, however many batches merge.
    mutating func merge(newer: WriteBatch) {
        if !newer.entityDeletes.isEmpty {
            let deleted = Set(newer.entityDeletes)
            var cancelled = Set<EntityID>()
            entityInserts.removeAll { id in
                guard deleted.contains(id) else { return false }
                cancelled.insert(id)
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

        durability = max(durability, newer.durability)
        checkpointAfter = checkpointAfter || newer.checkpointAfter
        criticalDrainedAt = [criticalDrainedAt, newer.criticalDrainedAt].compactMap { $0 }.max()
        derivedDrainedAt = [derivedDrainedAt, newer.derivedDrainedAt].compactMap { $0 }.max()
        reasons.formUnion(newer.reasons)
        sequence = max(sequence, newer.sequence)
    }
}

import GRDB
import GRDBSQLite

/// The batch part that appends a batch's component writes to the segment log: one row
/// per 64 KiB of records, all under the batch's seq, at the end of the `segments`
/// B-tree. Critical and derived writes alike: an append costs about the records'
/// bytes plus the last page, where an upsert in place costs a page per changed row
/// once the world outgrows the cache (docs/storage.md).
///
/// Except in a bulk batch (``WriteBatch/isBulk``: the first save of a large world): there
/// the components of the entities it spawns go straight into their base rows, in key
/// order, at the right edge of `components` (their numbers are new: no record of them can
/// be in the log), instead of into the log and, at the next compaction, into the base
/// rows again.
///
/// Writer thread. Encoding reuses one payload buffer and one encoder; the log's
/// counters and the type-id cache change only once the transaction commits.
final class SegmentAppender: BatchPart {
    let sections: [BatchSection] = [.components]

    let log: SegmentLog
    /// `component_types.id` by the world's type index.
    private var typeIDs: [Int64?]
    private var provisionalTypeIDs: [(index: UInt32, id: Int64)] = []
    /// The numbers stored replica states name their nodes and types by.
    private let stampIndex = StampIndex()
    private var encoder = SegmentEncoder()
    /// The batch's encoded payloads, back to back, and its records pointing into them.
    private var payloads = PayloadWriter(capacity: 64 * 1024)
    private var records: [SegmentEncoder.Pending] = []
    /// The keys written by the open transaction, with their record sizes.
    private var pendingKeys: [(key: SegmentKey, bytes: Int32)] = []
    /// The open transaction's rows: their seq, time, each one's bytes (``SegmentLog/rowTimes``), records.
    private var pendingRows: (seq: Int64, createdAt: Int64, sizes: [Int], records: Int)?
    /// Base rows a bulk batch wrote (added to the log's count once it commits).
    private var pendingBaseRows = 0
    /// A bulk batch's writes that go to base rows: their keys and payloads (reused).
    private var baseWrites: [(key: SegmentKey, version: Int, payload: Range<Int>)] = []
    /// This transaction's payloads become the bases of their keys' next records once it commits.
    private var basesToCommit = false

    init(log: SegmentLog, typeIDs: [Int64?]) {
        self.log = log
        self.typeIDs = typeIDs
    }

    func write(_ batch: WriteBatch, _ db: Database, _ counts: inout CommitCounts) throws {
        guard !batch.writes.isEmpty else { return }
        let seq = log.nextSeq
        pendingKeys.removeAll(keepingCapacity: true)
        records.removeAll(keepingCapacity: true)
        baseWrites.removeAll(keepingCapacity: true)
        payloads.reset()
        let spawned: Set<EntityNumber>? = batch.isBulk ? Set(batch.entityInserts.map(\.number)) : nil
        for write in batch.writes {
            let key = SegmentKey(entity: write.entity, typeID: try typeID(for: write, db))
            if let spawned, spawned.contains(write.entity) {
                // A new entity of a bulk batch: its base row (a removal has nothing to remove).
                guard let value = write.value else { continue }
                let start = payloads.bytes.count
                try encode(value, db)
                baseWrites.append((key, type(of: value).payloadVersion, start ..< payloads.bytes.count))
                counts.componentPuts += 1
                counts.payloadBytes += payloads.bytes.count - start
                if Self.isStoredState(value) { counts.stampPayloadBytes += payloads.bytes.count - start }
                continue
            }
            if let value = write.value {
                let start = payloads.bytes.count
                try encode(value, db)
                let payload = start ..< payloads.bytes.count
                // The key's payload last committed: the encoder may code this one against it.
                let base = payload.count <= XorCoding.maxBaseBytes ? log.bases.appendBase(of: key, length: payload.count, to: &payloads) : nil
                records.append(.init(key: key, version: type(of: value).payloadVersion, payload: payload, base: base))
                pendingKeys.append((key, Int32(payload.count + 3)))
                counts.componentPuts += 1
                counts.payloadBytes += payload.count   // the value's bytes, not its base's after them
                if Self.isStoredState(value) { counts.stampPayloadBytes += payload.count }
            } else {
                records.append(.init(key: key, version: 0, payload: nil))
                pendingKeys.append((key, 2))
                counts.componentRemovals += 1
            }
        }
        if !baseWrites.isEmpty { try writeBaseRows(db) }
        basesToCommit = true
        guard !records.isEmpty else { return }
        let chunks = payloads.bytes.withUnsafeBytes { encoder.encode(&records, arena: $0) }
        try Segment.insert(chunks, seq: seq, createdAt: counts.committedAt, db)
        let sizes = chunks.map(\.records.count)
        pendingRows = (seq, counts.committedAt, sizes, records.count)
        counts.segmentRows += chunks.count
        counts.segmentBytes += sizes.reduce(0, +)
    }

    /// Encodes `value` into the batch's payloads: a stored replica state with the
    /// document's numbers (``StampIndex``), any other value as its type does.
    private func encode(_ value: any Component, _ db: Database) throws {
        if Self.isStoredState(value), let state = value as? any StampIndexed {
            try state.encode(to: &payloads, index: stampIndex, db)
        } else {
            value.encode(to: &payloads)
            try rejectUnencodable()
        }
    }

    /// Whether `value` is a stored replica state: two metatypes compared, not a protocol
    /// conformance looked up for every write of a batch.
    @inline(__always)
    private static func isStoredState(_ value: any Component) -> Bool {
        let type = ObjectIdentifier(Swift.type(of: value))
        return type == ObjectIdentifier(StoredReplicaState.self) || type == ObjectIdentifier(ReplicaState.self)
    }

    /// A value whose encoding failed fails the commit with an error retrying cannot fix:
    /// the batch is split until that row is alone, and it is parked (Writer+Rejection.swift).
    private func rejectUnencodable() throws {
        guard let failure = payloads.encodingFailure else { return }
        payloads.encodingFailure = nil
        throw StoreError(.write, sqliteCode: SQLITE_MISMATCH, message: failure, path: "")
    }

    /// A bulk batch's new entities' components, as base rows, in key order.
    private func writeBaseRows(_ db: Database) throws {
        baseWrites.sort { $0.key.entity != $1.key.entity ? $0.key.entity < $1.key.entity : $0.key.typeID < $1.key.typeID }
        let insert = try db.cachedStatement(sql: """
            INSERT INTO components (entity_num, type_id, version, payload) VALUES (?, ?, ?, ?)
            """).sqliteStatement
        try payloads.bytes.withUnsafeBytes { arena in
            for write in baseWrites {
                sqlite3_bind_int64(insert, 1, write.key.entity)
                sqlite3_bind_int64(insert, 2, write.key.typeID)
                sqlite3_bind_int64(insert, 3, Int64(write.version))
                try bindBlob(insert, 4, UnsafeRawBufferPointer(rebasing: arena[write.payload]))
                try stepDone(insert, db)
            }
        }
        pendingBaseRows = baseWrites.count
    }

    func didCommit() {
        stampIndex.didCommit()
        if basesToCommit { commitBases() }
        for (index, id) in provisionalTypeIDs { setTypeID(id, at: index) }
        provisionalTypeIDs.removeAll()
        log.baseRows += pendingBaseRows
        pendingBaseRows = 0
        guard let rows = pendingRows else { return }
        pendingRows = nil
        log.noteRows(added: rows.sizes.count, bytes: rows.sizes.reduce(0, +), records: rows.records)
        for (part, bytes) in rows.sizes.enumerated() {
            log.noteRowTime(id: Segment.id(seq: rows.seq, part: part), createdAt: rows.createdAt, bytes: bytes)
        }
        for (key, bytes) in pendingKeys { log.noteLive(key, seq: rows.seq, bytes: bytes) }
        log.nextSeq = rows.seq + 1
        log.lastID = Segment.id(seq: rows.seq, part: rows.sizes.count - 1)
    }

    func didRollBack() {
        stampIndex.didRollBack()
        basesToCommit = false
        provisionalTypeIDs.removeAll()
        pendingRows = nil
        pendingBaseRows = 0
    }

    /// The payloads this transaction wrote, as their keys' bases (a removal forgets its key's).
    private func commitBases() {
        basesToCommit = false
        payloads.bytes.withUnsafeBytes { arena in
            for record in records {
                log.bases.commit(record.key, record.payload.map { UnsafeRawBufferPointer(rebasing: arena[$0]) }, wasCoded: record.base != nil)
            }
            for write in baseWrites { log.bases.commit(write.key, UnsafeRawBufferPointer(rebasing: arena[write.payload]), wasCoded: false) }
        }
    }

    /// The `component_types.id` of a write's type, interning the name on first use.
    /// Ids resolved inside a transaction are kept only once it commits.
    private func typeID(for write: ComponentWrite, _ db: Database) throws -> Int64 {
        let index = Int(write.typeIndex)
        if index < typeIDs.count, let id = typeIDs[index] { return id }
        if let pending = provisionalTypeIDs.first(where: { $0.index == write.typeIndex }) { return pending.id }
        let id = try ComponentTypeNames.intern(write.typeName, db)
        provisionalTypeIDs.append((write.typeIndex, id))
        return id
    }

    private func setTypeID(_ id: Int64, at index: UInt32) {
        let i = Int(index)
        if typeIDs.count <= i { typeIDs.append(contentsOf: repeatElement(nil, count: i + 1 - typeIDs.count)) }
        typeIDs[i] = id
    }
}

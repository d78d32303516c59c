/// Pulled values of one component type waiting to be decoded in one call. Tick thread
/// (inside ``World``'s ``ReplicaBook``).
///
/// A column is reached through ``AnyComponentColumn``, so decoding one value at a time
/// pays a call through it, and the type's metadata, every time; a run of values (a pull
/// brings thousands, in runs of one type) is decoded in one call, by a loop specialized for
/// the type, as a reload's rows are (`ComponentColumn+Load.swift`). Everything else about a value (its stamp, its
/// entity) is decided when it is staged; its decoding, and what follows, when the run
/// is applied. An entity is staged at most once: an operation that touches it again
/// applies the run first, so it reads that entity's state as it is.
struct StagedValues {
    /// The column the run decodes into; meaningless while the run is empty.
    private(set) var column = 0
    private(set) var rows: [LoadedRow] = []
    /// The payloads, back to back (`rows` say where each is).
    private(set) var bytes: [UInt8] = []
    private(set) var entries: [Entry] = []
    /// Per entity slot, the run it is staged in (`run` while it is in this one).
    private var marks: [UInt32] = []
    private var run: UInt32 = 1

    /// What a staged value is, beside its bytes.
    struct Entry {
        var entity: Entity
        var id: EntityID
        var type: String
        var value: HeldValue
        var spawned: Bool
        var node: NodeID
        var seq: Int64
    }

    var isEmpty: Bool { entries.isEmpty }

    func contains(_ entity: Entity) -> Bool {
        Int(entity.index) < marks.count && marks[Int(entity.index)] == run
    }

    mutating func add(_ payload: UnsafeRawBufferPointer, column: Int, entity: Entity, id: EntityID, type: String,
                      value: HeldValue, spawned: Bool, source: (node: NodeID, seq: Int64)) {
        self.column = column
        rows.append(LoadedRow(entity: entity.index, version: value.version, start: bytes.count, count: payload.count))
        bytes.append(contentsOf: UnsafeBufferPointer(start: payload.baseAddress?.assumingMemoryBound(to: UInt8.self), count: payload.count))
        entries.append(Entry(entity: entity, id: id, type: type, value: value, spawned: spawned, node: source.node, seq: source.seq))
        let slot = Int(entity.index)
        if slot >= marks.count { marks += repeatElement(0, count: max(slot + 1 - marks.count, marks.count)) }
        marks[slot] = run
    }

    /// Empties the run, keeping its storage.
    mutating func clear() {
        rows.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        run &+= 1
        if run == 0 {   // wrapped: no slot may look staged
            for i in marks.indices { marks[i] = 0 }
            run = 1
        }
    }
}

extension World {
    /// Decodes the staged run into its column in one call, then, value by value, queues
    /// it critical with its stamp and tells the host; a value that does not decode is
    /// held with its entity. Runs before anything reads the world (the end of a pulled
    /// slice, a despawn, a value for an entity staged already).
    func applyStaged() {
        guard !replicas.staged.isEmpty else { return }
        var staged = StagedValues()
        swap(&staged, &replicas.staged)   // its storage comes back below, not copied
        let column = columns[staged.column]
        var failures: [LoadFailure] = []
        // Decoded and queued critical in one loop specialized for the type.
        let queuedFirst = staged.rows.withUnsafeBufferPointer { rows in
            staged.bytes.withUnsafeBytes { bytes in column.load(rows, bytes: bytes, failures: &failures, queueCritical: true) }
        }
        if queuedFirst { tracker.noteColumnDirty(.critical, typeIndex: column.typeIndex, clock: clock) }
        var nextFailure = 0
        staged.entries.withUnsafeBufferPointer { entries in
            for position in entries.indices {
                let entry = entries[position]
                if nextFailure < failures.count, failures[nextFailure].row == position {
                    nextFailure += 1
                    let row = staged.rows[position]
                    let outcome = staged.bytes.withUnsafeBytes { bytes in
                        hold(entry.value, payload: UnsafeRawBufferPointer(rebasing: bytes[row.start ..< row.start + row.count]), .undecodable,
                             of: entry.type, entity: entry.entity, id: entry.id, spawned: entry.spawned)
                    }
                    note(outcome, of: entry.node, entry.seq)
                } else {
                    applied(entry.value.stamp, of: entry.type, column: column, entity: entry.entity, id: entry.id,
                            spawned: entry.spawned, removed: false, queued: true)
                    note(.applied, of: entry.node, entry.seq)
                }
            }
        }
        staged.clear()
        swap(&staged, &replicas.staged)
    }
}

/// The replica states' column persists through its hook (``ColumnPersistence``): stored,
/// an entity's state is its stamps (kept in the ``StampTable``) and its held values (kept
/// in the column), one `strata.replica` row built at the drain and split at the reload
/// (`World+ReplicaStates.swift`). Tick thread.
extension ReplicaState: PersistedThroughHook {
    static func persistence(column: Int) -> any ColumnPersistence { ReplicaStatePersistence(column: column) }
}

final class ReplicaStatePersistence: ColumnPersistence {
    /// The state column's index in the world.
    let column: Int

    init(column: Int) { self.column = column }

    func hasRow(_ slot: UInt32, in world: World) -> Bool {
        world.replicas.stamps.hasAny(slot) || world.columns[column].denseIndex(slot) != nil
    }

    func drain(_ world: World, records: UnsafeBufferPointer<World.EntityRecord>, into writes: inout [ComponentWrite]) {
        world.drainReplicaStates(records: records, into: &writes)
    }

    func snapshot(_ world: World, records: UnsafeBufferPointer<World.EntityRecord>, into writes: inout [ComponentWrite]) {
        world.snapshotReplicaStates(records: records, into: &writes)
    }

    /// A version-3 row's stamps of replicated types go straight to the ``StampTable``, and
    /// only what is left (held values, stamps of types this build does not replicate) to the
    /// column; an older row goes to the column whole, and ``adoptLoaded(_:)`` splits it.
    func load(_ rows: UnsafeBufferPointer<LoadedRow>, bytes: UnsafeRawBufferPointer, failures: inout [LoadFailure],
              names: StampNames, in world: World) {
        world.withStateColumn { column in
            for position in rows.indices {
                let row = rows[position]
                let slot = row.entity
                forgetLoaded(slot, in: world)   // a newer row of the key replaces the older whole
                column.forget(slot)
                var reader = PayloadReader(UnsafeRawBufferPointer(rebasing: bytes[row.start ..< row.start + row.count]))
                do {
                    let state = row.version >= 3
                        ? try ReplicaState(version3: &reader, names: names) { world.replicas.stamps.set($0, slot, $1) }
                        : try ReplicaState(from: &reader, version: row.version)
                    if !state.isEmpty { column.set(state, at: slot) }
                } catch {
                    forgetLoaded(slot, in: world)
                    failures.append(LoadFailure(row: position, error: error))
                }
            }
        }
    }

    func forgetLoaded(_ slot: UInt32, in world: World) { world.replicas.stamps.clear(slot) }

    func adoptLoaded(_ world: World) { world.adoptLoadedReplicaStates() }

    /// Stamps only move forward: a parked state is merged into the world's (what came since
    /// wins), and the whole state written again, as a parked removal is.
    func replay(_ row: RejectedWrite, of entity: Entity, in world: World) -> String? {
        do {
            let parked = row.kind == .componentRemoval ? ReplicaState() : try row.decode(ReplicaState.self)
            world.mergeParkedReplicaState(parked, of: entity)
            return nil
        } catch {
            return "it does not decode: \(error)"
        }
    }

    func reserve(slots: Int, in world: World) { world.columns[column].reserveSlots(slots) }
}

/// A replicated entity's state as one critical drain hands it to the writer: a range of
/// a list the drain shares among all its entities, written as a ``ReplicaState`` (same
/// name, tier and payload version; rows read back as one). Made on the tick thread,
/// encoded on the writer thread.
///
/// A ``ReplicaState`` per entity would be a list made on the tick thread and freed on the
/// writer's: one allocation for each changed replicated entity, where this is one for the
/// drain. Only states with nothing held go this way (the others are whole ``ReplicaState``s).
struct StoredReplicaState: Component {
    static let typeName = ReplicaState.typeName
    static let tier = ReplicaState.tier
    static let payloadVersion = ReplicaState.payloadVersion

    let run: StampRun
    let start: Int32
    let count: Int32

    var stamps: ArraySlice<ReplicaState.Stamped> { run.stamps[Int(start) ..< Int(start + count)] }

    func encode(to payload: inout PayloadWriter) {
        ReplicaState.encode(stamps: stamps, held: [], to: &payload)
    }

    /// Never decoded: a stored state reads back as a ``ReplicaState``.
    init(from payload: inout PayloadReader, version: Int) throws {
        throw PayloadError.invalid("\(Self.typeName) is read as a ReplicaState")
    }

    init(run: StampRun, start: Int, count: Int) {
        self.run = run
        self.start = Int32(start)
        self.count = Int32(count)
    }

    static func == (a: StoredReplicaState, b: StoredReplicaState) -> Bool { a.stamps == b.stamps }
}

/// The stamps of the states one critical drain writes, back to back. Filled by the drain
/// before the batch leaves the tick thread, never changed after: read-only on the writer.
final class StampRun: @unchecked Sendable {
    var stamps: [ReplicaState.Stamped] = []
}

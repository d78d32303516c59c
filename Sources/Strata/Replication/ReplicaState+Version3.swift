import GRDB

/// How the writer stores a ``ReplicaState``: payload version 3, which names each stamp's
/// node by its number in the document (`replica_nodes`, ``StampIndex``) and its type by
/// its `component_types.id`, where version 2 wrote the node's 16 bytes and the type's name.
///
/// The stamps, in the state's order: the type's id, the node's number, the timestamp as
/// the difference from the one before it (zig-zag varint; the first from 0). Then the
/// held values: each the type's name (a held type may be one this build does not know),
/// the node's number, the timestamp's difference, the payload version, the reason, and the
/// payload. A shape's two stamps from one device take about 17 bytes (66 in version 2).
///
/// A version-3 row reads only with its document's numbers (``StampNames``): the reload
/// reads it through the column's hook (``ReplicaStatePersistence``). A row parked outside
/// the segment log (`rejected_writes`, the side file) is written self-contained, in
/// version 2 (``Component/encode(to:)``), so it reads anywhere.
extension ReplicaState {
    /// The version a state encoded without the document's numbers is written in.
    static let selfContainedVersion = 2

    /// `stamps` and `held`, in version 3. Writer thread, inside the commit's transaction.
    static func encode<Stamps: Collection<Stamped>>(stamps: Stamps, held: [Held], to payload: inout PayloadWriter,
                                                    index: StampIndex, _ db: Database) throws {
        var previous: Int64 = 0
        payload.write(UInt64(stamps.count))
        for entry in stamps {
            payload.write(UInt64(bitPattern: try index.number(ofType: entry.type, db)))
            payload.write(UInt64(bitPattern: try index.number(ofNodeOf: entry.stamp, db)))
            payload.write(entry.stamp.timestamp &- previous)
            previous = entry.stamp.timestamp
        }
        payload.write(UInt64(held.count))
        for entry in held {
            let value = entry.value
            payload.write(entry.type)
            payload.write(UInt64(bitPattern: try index.number(ofNodeOf: value.stamp, db)))
            payload.write(value.stamp.timestamp &- previous)
            previous = value.stamp.timestamp
            payload.write(value.version)
            payload.write(value.reason.rawValue)
            payload.write(value.payload != nil)
            if let bytes = value.payload { payload.write(bytes) }
        }
    }

    /// Reads a version-3 state with its document's numbers. The stamp of a type this
    /// build replicates goes to `replicated` (its column and the stamp), as the world keeps
    /// it apart (``StampTable``); what is returned holds the rest: the stamps of other types,
    /// and the held values. Opening thread.
    init(version3 payload: inout PayloadReader, names: StampNames,
         replicated: (_ column: Int, _ stamp: OperationStamp) -> Void) throws {
        self.init()
        var previous: Int64 = 0
        func stamp(_ payload: inout PayloadReader) throws -> OperationStamp {
            let number: UInt64 = try payload.read()
            guard number <= UInt64(Int64.max), var stamp = names.nodes[Int64(number)] else {
                throw PayloadError.invalid("node number \(number) is not in replica_nodes")
            }
            previous = previous &+ (try payload.read() as Int64)
            stamp.timestamp = previous
            return stamp
        }
        for _ in 0 ..< (try payload.readCount()) {
            let id: UInt64 = try payload.read()
            let type = Int64(bitPattern: id)
            let read = try stamp(&payload)
            if let column = names.columns[type] {
                replicated(column, read)
            } else if let name = names.typeNames[type] {
                Self.set(&stamps, name, read)
            } else {
                throw PayloadError.invalid("type id \(id) is not in component_types")
            }
        }
        for _ in 0 ..< (try payload.readCount()) {
            let type: String = try payload.read()
            let read = try stamp(&payload)
            let version: Int = try payload.read()
            let raw: UInt8 = try payload.read()
            guard let reason = HeldValue.Reason(rawValue: raw) else { throw PayloadError.invalid("held reason \(raw)") }
            let present: Bool = try payload.read()
            Self.set(&held, type, HeldValue(stamp: read, version: version, payload: present ? try payload.read() as [UInt8] : nil,
                                            reason: reason))
        }
    }
}

/// A stored state the writer encodes with the document's numbers (``ReplicaState`` and
/// ``StoredReplicaState``).
protocol StampIndexed: Component {
    func encode(to payload: inout PayloadWriter, index: StampIndex, _ db: Database) throws
}

extension ReplicaState: StampIndexed {
    func encode(to payload: inout PayloadWriter, index: StampIndex, _ db: Database) throws {
        try Self.encode(stamps: stamps, held: held, to: &payload, index: index, db)
    }
}

extension StoredReplicaState: StampIndexed {
    func encode(to payload: inout PayloadWriter, index: StampIndex, _ db: Database) throws {
        try ReplicaState.encode(stamps: stamps, held: [], to: &payload, index: index, db)
    }
}

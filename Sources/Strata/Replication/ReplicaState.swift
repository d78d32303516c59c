/// What a replicated entity keeps, as stored: the stamp of the last operation applied
/// to each of its replicated types, and the operations it holds without applying them (a
/// type this build does not know, a newer payload version, a payload that does not
/// decode, a stamp too far ahead of the clock).
///
/// Stored as a component of the entity (critical, local), it is written in the same
/// commit as the values it stamps, goes through the segment log, compaction and the
/// salvage like them, and goes with the entity when it is despawned. In the world, the
/// column of this type keeps only what has no replicated column (held values, stamps of
/// types this build does not know): the other stamps are in the ``StampTable``, and the
/// drain writes the whole state (`World+ReplicaStates.swift`). Tick thread.
struct ReplicaState: Component {
    static let typeName = "strata.replica"
    static let tier = Tier.critical
    /// 3: nodes and types by the document's numbers (`ReplicaState+Version3.swift`), as the
    /// writer stores it; 2 (node ids listed once, names and timestamps as deltas,
    /// `ReplicaState+Encoding.swift`) where a state must read without them.
    static let payloadVersion = 3

    /// Per type name, in name order: the stamp of the operation whose value the entity
    /// holds (or whose removal it applied). Arrays, not dictionaries: an entity has a few
    /// replicated types, and a pulled operation reads and writes this (no hashing). Of
    /// structs, not tuples: a tuple's copies go through runtime metadata.
    var stamps: [Stamped] = []
    /// Per type name, in name order: the newest operation held back, with why.
    var held: [Held] = []

    struct Stamped: Equatable {
        var type: String
        var stamp: OperationStamp
    }

    struct Held: Equatable {
        var type: String
        var value: HeldValue
    }

    init() {}

    func stamp(of type: String) -> OperationStamp? {
        stamps.first { $0.type == type }?.stamp
    }

    func heldValue(of type: String) -> HeldValue? {
        held.first { $0.type == type }?.value
    }

    /// Nothing stamped, nothing held: no state to keep (or store).
    var isEmpty: Bool { stamps.isEmpty && held.isEmpty }

    /// Holds `value` for `type` (nil: holds nothing).
    mutating func hold(_ type: String, _ value: HeldValue?) {
        Self.set(&held, type, value)
    }

    /// Sets (or with nil, removes) `type`'s held value.
    static func set(_ list: inout [Held], _ type: String, _ value: HeldValue?) {
        let index = list.firstIndex { $0.type >= type } ?? list.endIndex
        let present = index < list.endIndex && list[index].type == type
        switch (value, present) {
        case (let value?, true): list[index].value = value
        case (let value?, false): list.insert(Held(type: type, value: value), at: index)
        case (nil, true): list.remove(at: index)
        case (nil, false): break
        }
    }

    /// Sets `type`'s stamp.
    static func set(_ list: inout [Stamped], _ type: String, _ stamp: OperationStamp) {
        if list.isEmpty {
            list = [Stamped(type: type, stamp: stamp)]   // a new entity's: one allocation, sized
        } else if let index = list.firstIndex(where: { $0.type >= type }) {
            if list[index].type == type { list[index].stamp = stamp } else { list.insert(Stamped(type: type, stamp: stamp), at: index) }
        } else {
            list.append(Stamped(type: type, stamp: stamp))
        }
    }

    static func == (a: ReplicaState, b: ReplicaState) -> Bool {
        a.stamps == b.stamps && a.held == b.held
    }
}

/// A replicated value received but not applied, kept byte for byte with its stamp.
struct HeldValue: Equatable, Sendable {
    var stamp: OperationStamp
    var version: Int
    /// The value's payload; nil for a removal.
    var payload: [UInt8]?
    var reason: Reason

    /// Why a value is held, and so when it is tried again.
    enum Reason: UInt8, Sendable, CaseIterable, CustomStringConvertible, Error {
        /// No component type of this name is registered (or this build declares it local):
        /// tried at every open.
        case unknownType = 1
        /// Encoded with a payload version above this build's: tried at every open.
        case newerVersion = 2
        /// The type's decoder refused it: kept, reported, tried at every open.
        case undecodable = 3
        /// Stamped beyond `max_clock_ahead_secs` ahead of the clock: tried once it is not.
        case future = 4

        var description: String {
            switch self {
            case .unknownType: "unknown type"
            case .newerVersion: "newer payload version"
            case .undecodable: "undecodable"
            case .future: "stamped in the future"
            }
        }

        /// The reason as a metric's label value.
        var metricLabel: String {
            switch self {
            case .unknownType: "unknown_type"
            case .newerVersion: "newer_version"
            case .undecodable: "undecodable"
            case .future: "too_far_ahead"
            }
        }
    }
}

/// Why a batch was flushed (the specification, *Flush events*).
///
/// Every batch records its reasons; ``PersistenceMetrics/flushesByReason`` counts them.
public enum FlushReason: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    /// Critical changes reached `critical_flush_delay_ms`.
    case criticalDelay = "critical_delay"
    /// Derived changes reached the derived interval while active.
    case derivedInterval = "derived_interval"
    /// Derived changes reached the idle interval (no input for `idle_after_secs`).
    case idleInterval = "idle_interval"
    /// A user savepoint: stroke end, undo, redo, metadata change.
    case majorAction = "major_action"
    /// The host asked to save.
    case explicitSave = "explicit_save"
    /// The app is about to go to the background (SIGTSTP in `strata sim`).
    case background
    /// The host or the kernel reported memory pressure.
    case lowMemory = "low_memory"
    /// The user switched documents.
    case documentSwitch = "document_switch"
    /// Operation-log entries arrived from peers.
    case networkOperations = "network_operations"
    /// Final flush of a clean shutdown.
    case shutdown

    public var description: String { rawValue }

    /// How soon a flush event with this reason must reach the database.
    public enum Urgency: Sendable, Equatable {
        /// Chosen by the flush policy (deadlines, intervals).
        case scheduled
        /// Every tier within `critical_flush_delay_ms`: events in one window share a commit.
        case withinCriticalDelay
        /// Every tier now, then a checkpoint: the app may be about to stop.
        case nowThenCheckpoint
    }

    public var urgency: Urgency {
        switch self {
        case .criticalDelay, .derivedInterval, .idleInterval: .scheduled
        case .majorAction, .networkOperations: .withinCriticalDelay
        case .background, .lowMemory, .explicitSave, .documentSwitch, .shutdown: .nowThenCheckpoint
        }
    }
}

extension FlushReason {
    /// The reasons by bit index: `byBit[i].bit == 1 << i` (declaration order).
    static let byBit = FlushReason.allCases

    /// Position in ``FlushReasonSet``'s word.
    var bit: UInt16 {
        switch self {
        case .criticalDelay: 1 << 0
        case .derivedInterval: 1 << 1
        case .idleInterval: 1 << 2
        case .majorAction: 1 << 3
        case .explicitSave: 1 << 4
        case .background: 1 << 5
        case .lowMemory: 1 << 6
        case .documentSwitch: 1 << 7
        case .networkOperations: 1 << 8
        case .shutdown: 1 << 9
        }
    }
}

/// A set of flush reasons in one word: built on the tick thread at every flush, so it
/// must not allocate.
public struct FlushReasonSet: Sendable, Equatable, Sequence, ExpressibleByArrayLiteral {
    private var bits: UInt16 = 0

    public init() {}
    public init(arrayLiteral reasons: FlushReason...) { for r in reasons { insert(r) } }

    public var isEmpty: Bool { bits == 0 }
    public func isDisjoint(with other: FlushReasonSet) -> Bool { bits & other.bits == 0 }

    /// The reasons whose batch carries the vector clock whatever its trigger says: those
    /// that flush now and checkpoint (app transitions and shutdown, which may be the last
    /// chance). A constant, so that a drain tests it with one AND.
    static var withVectorClock: FlushReasonSet { [.explicitSave, .background, .lowMemory, .documentSwitch, .shutdown] }
    public func contains(_ reason: FlushReason) -> Bool { bits & reason.bit != 0 }
    public mutating func insert(_ reason: FlushReason) { bits |= reason.bit }
    public mutating func formUnion(_ other: FlushReasonSet) { bits |= other.bits }
    public func union(_ other: FlushReasonSet) -> FlushReasonSet {
        var u = self
        u.formUnion(other)
        return u
    }

    public func makeIterator() -> Iterator { Iterator(set: self) }

    /// Walks the reasons in declaration order (bit order) without allocating.
    public struct Iterator: IteratorProtocol {
        var remaining: UInt16

        init(set: FlushReasonSet) { remaining = set.bits }

        public mutating func next() -> FlushReason? {
            guard remaining != 0 else { return nil }
            let index = remaining.trailingZeroBitCount
            remaining &= remaining - 1
            return FlushReason.byBit[index]
        }
    }
}

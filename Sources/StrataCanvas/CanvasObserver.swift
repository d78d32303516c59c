import Strata

/// A change the canvas reports as it makes it: the critical ones, the operations it logs
/// (its own and the peer's) and one derived change, the viewport's pans.
public enum CanvasChange: Sendable {
    case spawn
    case despawn
    case strokeEnd
    case metadata(revision: Int)
    /// An operation logged (appended or received).
    case logged(sequence: Int64)
    /// The viewport panned to `x` (derived).
    case pan(x: Int)
}

/// Told of every ``CanvasChange`` the moment the canvas makes it: ``CriticalTrace`` writes
/// them to a file for the crash tests; the benchmark counts them as changes to persist.
/// Tick thread.
public protocol CanvasObserver: AnyObject {
    func record(_ change: CanvasChange, _ id: EntityID)
}

import Foundation

/// What the network says, from a monitor (``NetworkMonitor``: NetworkManager over D-Bus).
public enum Connectivity: String, Sendable, Codable {
    case online, offline, unknown
}

/// A source of ``Connectivity`` the sync client reads from its thread.
public protocol ConnectivitySource: AnyObject, Sendable {
    var connectivity: Connectivity { get }
    /// Moves whenever ``connectivity`` changes.
    var changeCount: Int { get }
}

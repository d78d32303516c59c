import Foundation

/// What the sync is doing (``Engine/sync``), for status lines and tests (any thread).
public struct SyncState: Sendable, Equatable {
    /// The last call to the server succeeded.
    public var online = false
    /// What the network monitor says (unknown without one).
    public var network = Connectivity.unknown
    public var pushes = 0
    public var pushedOperations = 0
    /// Operations the server already had when they were pushed (a retried push).
    public var duplicatesIgnored = 0
    public var pulledOperations = 0
    public var refusals = 0
    public var deadLetters = 0
    public var lastError: String?
    /// When the last push was acknowledged (wall ms), and when the network last came online.
    public var lastPushAt: Int64?
    public var cameOnlineAt: Int64?
    /// When the first push after coming online was acknowledged (wall ms).
    public var firstPushAt: Int64?
    /// The server clock minus the local one at the last connect (ms).
    public var clockSkew: Int64?
    /// The server has every operation of this replica through this sequence.
    public var acknowledgedThrough: Int64 = 0
    /// Operations refused by the server: retried, or dead letters.
    public var failing = 0
    /// The server's news reaches this device (`listen`), so it pulls when told.
    public var listening = false
    /// Wakes by the server's news (each may stand for many notifications).
    public var notifications = 0
    /// Calls to the server: connects, pushes, pulls (what an idle device costs it).
    public var requests = 0
    /// Pull requests, and the ones a notification or listening began asked for.
    public var pulls = 0
    public var notifiedPulls = 0
    /// Catching up: pages come back full (a device joining a large document, or back
    /// after a long time offline); the operations pulled since it began.
    public var catchingUp = false
    public var catchUpPulled = 0
    /// The server refused this device's pushes as a reader's: its operations wait in the
    /// outbox, pulls go on (``SyncError/Kind/readOnly``).
    public var readOnly = false

    /// How far this device's clock is ahead of the server's (s), if it is more than
    /// `limit` ahead (`[sync] max_clock_ahead_secs`): the other devices hold its edits
    /// as stamped in the future until their clocks get there. Nil if it is not (or the
    /// server's clock was never read).
    public func secondsAhead(of limit: Duration) -> Double? {
        guard let skew = clockSkew, Double(-skew) > limit.milliseconds else { return nil }
        return Double(-skew) / 1000
    }

    /// This replica's operations the server lacks, given the highest logged one.
    public func outbox(highest: Int64) -> Int { Int(max(0, highest - acknowledgedThrough)) }
}

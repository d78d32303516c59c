import Synchronization
import CStrataVFS
import Foundation

/// What SQLite asked of the disk through one file kind.
public struct VFSFileCounts: Sendable, Equatable, Codable {
    /// Sync requests (xSync): each is one fsync/fdatasync, plus a directory fsync on the
    /// first sync of a new WAL or journal.
    public var syncs = 0
    public var writes = 0
    public var writeBytes = 0
    public var truncates = 0

    public init() {}

    static func - (a: VFSFileCounts, b: VFSFileCounts) -> VFSFileCounts {
        var d = VFSFileCounts()
        d.syncs = a.syncs - b.syncs
        d.writes = a.writes - b.writes
        d.writeBytes = a.writeBytes - b.writeBytes
        d.truncates = a.truncates - b.truncates
        return d
    }
}

/// The counts of the engine's counting VFS per file kind.
public struct VFSCounts: Sendable, Equatable, Codable {
    public var mainDatabase = VFSFileCounts()
    public var wal = VFSFileCounts()
    public var journal = VFSFileCounts()
    public var other = VFSFileCounts()
    /// When the latest sync request happened (`CLOCK_MONOTONIC`), if any.
    public var lastSync: Instant?

    public init() {}

    var all: [VFSFileCounts] { [mainDatabase, wal, journal, other] }
    public var syncs: Int { all.reduce(0) { $0 + $1.syncs } }
    public var writes: Int { all.reduce(0) { $0 + $1.writes } }
    public var writeBytes: Int { all.reduce(0) { $0 + $1.writeBytes } }

    /// The counts accumulated since `earlier`.
    public func since(_ earlier: VFSCounts) -> VFSCounts {
        var d = VFSCounts()
        d.mainDatabase = mainDatabase - earlier.mainDatabase
        d.wal = wal - earlier.wal
        d.journal = journal - earlier.journal
        d.other = other - earlier.other
        d.lastSync = lastSync
        return d
    }
}

extension Instant: Codable {
    public init(from decoder: any Decoder) throws { nanoseconds = try decoder.singleValueContainer().decode(Int64.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(nanoseconds)
    }
}

/// A counting SQLite VFS (`CStrataVFS`): wraps the default `unix` VFS and counts sync
/// requests, writes and truncations per file kind. Select it per database with a URI
/// (``StoreLocation/vfs``); the engine does when `[metrics] count_fsyncs = true`.
///
/// ```swift
/// let vfs = try CountingVFS.register(name: "counted")
/// // open "file:/path/doc.db?vfs=counted" …
/// print(vfs.counts.wal.syncs)
/// ```
package final class CountingVFS: Sendable {
    public let name: String

    private init(name: String) { self.name = name }

    /// Registers (or finds) the counting VFS named `name`.
    public static func register(name: String) throws -> CountingVFS {
        let rc = strata_vfs_register(name)
        guard rc == 0 else { throw StoreError(.open, sqliteCode: rc, message: "cannot register VFS \(name)", path: "") }
        return CountingVFS(name: name)
    }

    /// Counting VFSs no open engine uses. SQLite keeps a VFS registered until the process
    /// ends, so engines take one from here and give it back at their close (``VFSLease``)
    /// instead of registering one per open.
    private static let idle = Mutex<[String]>([])

    /// A VFS of its own, for one engine's counts: an idle one, or a new one.
    static func acquire() throws -> CountingVFS {
        if let name = idle.withLock({ $0.popLast() }) {
            let vfs = CountingVFS(name: name)
            _ = vfs.takePageWrites()   // what its last engine left untaken
            vfs.reset()
            return vfs
        }
        return try registerUnique()
    }

    /// A new VFS under a name of its own.
    static func registerUnique() throws -> CountingVFS {
        try register(name: "strata-counting-\(UUID().uuidString.prefix(8).lowercased())")
    }

    /// Gives a VFS back once no connection uses it. Its page log stays readable until
    /// another engine takes it (`strata sim` reads the shutdown's pages after the close).
    static func release(_ vfs: CountingVFS) {
        vfs.recordPageWrites(false)
        idle.withLock { $0.append(vfs.name) }
    }

    /// Counting VFSs registered in this process (tests).
    static var registeredCount: Int { Int(strata_vfs_registered()) }

    /// The counters now (any thread).
    public var counts: VFSCounts {
        var raw = strata_vfs_counts()
        _ = strata_vfs_read(name, &raw)
        var counts = VFSCounts()
        func convert(_ c: strata_vfs_file_counts) -> VFSFileCounts {
            var f = VFSFileCounts()
            f.syncs = Int(c.syncs)
            f.writes = Int(c.writes)
            f.writeBytes = Int(c.write_bytes)
            f.truncates = Int(c.truncates)
            return f
        }
        counts.mainDatabase = convert(raw.kinds.0)
        counts.wal = convert(raw.kinds.1)
        counts.journal = convert(raw.kinds.2)
        counts.other = convert(raw.kinds.3)
        counts.lastSync = raw.last_sync_ns == 0 ? nil : Instant(nanoseconds: Int64(raw.last_sync_ns))
        return counts
    }

    public func reset() { _ = strata_vfs_reset(name) }
}

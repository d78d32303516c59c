import Synchronization

/// One engine's counting VFS (``CountingVFS``): its counts since the open, and at the
/// close the counts frozen and the VFS given back for the next open (SQLite never lets
/// go of a registered VFS: one per open would grow without bound in a long process).
/// Any thread.
final class VFSLease: Sendable {
    let vfs: CountingVFS
    private let baseline: VFSCounts
    /// Set at the close: what the engine's metrics report from then on.
    private let frozen = Mutex<VFSCounts?>(nil)

    init(_ vfs: CountingVFS) {
        self.vfs = vfs
        baseline = vfs.counts
    }

    /// What SQLite asked of the disk through this engine since its open.
    var counts: VFSCounts {
        frozen.withLock { $0 } ?? vfs.counts.since(baseline)
    }

    /// Freezes the counts and gives the VFS back. Call once no connection uses it.
    func close() {
        let first = frozen.withLock { frozen -> Bool in
            guard frozen == nil else { return false }
            frozen = vfs.counts.since(baseline)
            return true
        }
        if first { CountingVFS.release(vfs) }
    }
}

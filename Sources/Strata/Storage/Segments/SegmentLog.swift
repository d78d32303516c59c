/// What the writer knows about the segment log: its size, its *live* records (the
/// newest record of each key), the next sequence number, and the base rows beside it.
///
/// Built by the reload, which reads every record; kept up to date by
/// ``SegmentAppender`` after each commit and by the compactor after each step. The
/// compaction policy reads it: garbage is `bytes − liveBytes`.
///
/// Owned by the writer thread after open.
final class SegmentLog {
    /// Where a key's newest record is, and about how many bytes it takes.
    struct Live {
        var seq: Int64
        var bytes: Int32
    }

    /// The seq of the next batch's segments (one above every seq in the log).
    var nextSeq: Int64 = 1
    /// The id of the newest row; nil when the log is empty.
    var lastID: Int64?
    private(set) var segmentCount = 0
    /// Bytes of records in the log (the `records` BLOBs).
    private(set) var bytes = 0
    private(set) var records = 0
    private(set) var live: [SegmentKey: Live] = [:]
    private(set) var liveBytes = 0
    /// Rows that cannot be read (``SegmentDamage``), as found by the reload.
    var unreadableRows = 0
    /// The unreadable row at the front of the log, once a compaction step reached it:
    /// compaction never consumes it nor anything after it, so it stops for good.
    var blockedBy: Int64?
    /// Base rows (`components`), as counted at open and kept by folds (an estimate:
    /// rows removed by a despawn's cascade are not subtracted).
    var baseRows = 0
    /// Spawns and despawns whose rows wait for compaction (``PendingEntities``): counted at
    /// open and after every compaction step, and kept by the commits in between.
    var pendingSpawns = 0
    var pendingDespawns = 0
    var pendingEntities: Int { pendingSpawns + pendingDespawns }
    /// Mean bytes a base row takes in its B-tree (payload and keys), measured at open.
    var baseRowBytes = 32
    /// Each row's id, time and bytes, in id order (`SegmentLog+Window.swift`): what the
    /// history window leaves alone.
    var rowTimes: [RowTime] = []
    /// The payload last committed for each key, the next record's base (``XorCoding``).
    let bases = SegmentBaseCache()

    var liveKeys: Int { live.count }

    /// Rows added (an append, or a merge's output).
    func noteRows(added rows: Int, bytes: Int, records: Int) {
        segmentCount += rows
        self.bytes += bytes
        self.records += records
    }

    /// Rows consumed by a compaction step.
    func noteRows(removed rows: Int, bytes: Int, records: Int) {
        segmentCount -= rows
        self.bytes -= bytes
        self.records -= records
    }

    /// `key`'s newest record is now the one of `seq`, `bytes` long.
    func noteLive(_ key: SegmentKey, seq: Int64, bytes: Int32) {
        if let old = live.updateValue(Live(seq: seq, bytes: bytes), forKey: key) { liveBytes -= Int(old.bytes) }
        liveBytes += Int(bytes)
    }

    /// `key`'s record of `seq` or older left the log (folded, or dropped as dead).
    func forget(_ key: SegmentKey, upTo seq: Int64) {
        guard let current = live[key], current.seq <= seq else { return }
        live[key] = nil
        liveBytes -= Int(current.bytes)
    }

    /// `key`'s newest record, of `seq` or older, was rewritten by a merge into `newSeq`.
    func moveLive(_ key: SegmentKey, upTo seq: Int64, to newSeq: Int64) {
        guard var current = live[key], current.seq <= seq else { return }
        current.seq = newSeq
        live[key] = current
    }

    /// Estimated pages of the base table.
    func basePages(pageSize: Int) -> Int { max(1, baseRows * baseRowBytes / max(pageSize, 512)) }
}

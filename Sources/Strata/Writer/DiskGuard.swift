import Foundation

/// The disk-space guard (the specification, *Corruption and disk space*: space is checked before writes).
/// Before each commit the writer reads the free space of the document's filesystem
/// (`statvfs`, about a microsecond). Below `[writer] min_free_disk_mb` it holds batches
/// that carry only derived work: they wait in the hand-off, where later batches merge into
/// them (memory stays bounded by the keys that changed), and go to disk with the next
/// batch that carries critical work, or once space returns. Batches with critical work,
/// app transitions and the shutdown's final batch are always attempted: SQLite may still
/// find room, and if not the batch is retried (and, at shutdown, parked).
///
/// At a shutdown that meets a full disk, it frees the reserve (``DiskReserve``) once.
///
/// Writer thread.
final class DiskGuard {
    let context: WriterContext
    /// Free space was below `min_free_disk_mb` at the last look.
    private(set) var low = false
    /// The disk reserve was freed this session.
    private var reserveReleased = false

    /// `[writer] min_free_disk_mb` and `disk_reserve_mb`, and how free space is read.
    struct Settings {
        /// Below this much free space, derived batches wait; 0: off.
        var minFreeDiskBytes: Int
        /// Freed when a shutdown meets a full disk (``DiskReserve``); 0: none.
        var diskReserveBytes: Int
        /// Reads the free space for the document at a path (tests replace `statvfs`).
        var freeDiskSpace: @Sendable (String) -> Int?

        init(config: StrataConfig, options: Engine.Options) {
            minFreeDiskBytes = config.writer.minFreeDiskBytes
            diskReserveBytes = config.writer.diskReserveBytes
            freeDiskSpace = options.freeDiskSpace ?? DiskGuard.freeDiskSpace
        }
    }

    let settings: Settings

    init(_ context: WriterContext, _ settings: Settings) {
        self.context = context
        self.settings = settings
    }

    /// Whether to hold `batch` back for lack of space; if so it is put back.
    func hold(_ batch: WriteBatch) -> Bool {
        let (store, buffer, logger) = (context.store, context.buffer, context.logger)
        guard settings.minFreeDiskBytes > 0 else { return false }
        let free = settings.freeDiskSpace(store.location.path)
        let low = free.map { $0 < settings.minFreeDiskBytes } ?? false
        if low != self.low {
            self.low = low
            let mb = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
            if low {
                logger.warning("writer: \(mb(free ?? 0)) free on the document's filesystem, below min_free_disk_mb (\(mb(settings.minFreeDiskBytes))): derived batches are held in memory, critical ones still committed")
            } else {
                logger.notice("writer: disk space is back (\(mb(free ?? 0)) free): derived batches are committed again")
            }
        }
        let hold = low && batch.criticalDrainedAt == nil && !batch.checkpointAfter && !buffer.isClosed
        context.metrics.update {
            $0.freeDiskBytes = free
            $0.lowDiskSpace = low
            if hold { $0.batchesHeldForDiskSpace += 1 }
        }
        if hold { buffer.putBack(batch) }
        return hold
    }

    /// The space kept for a shutdown on a full disk (``DiskReserve``).
    var reserve: DiskReserve { DiskReserve(path: context.store.location.reservePath, bytes: settings.diskReserveBytes) }

    /// Frees the reserve once, when a shutdown cannot commit its last batch. Returns
    /// whether it freed anything (then the batch is tried once more).
    func releaseReserve() -> Bool {
        guard !reserveReleased else { return false }
        reserveReleased = true
        let freed = reserve.release()
        guard freed > 0 else { return false }
        context.logger.warning("writer: the disk is full at shutdown: freed the \(freed / 1024) KB kept in \(context.store.location.reservePath) for this, and trying the last batch once more")
        context.metrics.update { $0.diskReserveReleases += 1 }
        return true
    }

    /// Free bytes for an unprivileged writer on the filesystem holding `path` (`statvfs`).
    static func freeDiskSpace(_ path: String) -> Int? {
        var stats = statvfs()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard statvfs(directory, &stats) == 0 else { return nil }
        return Int(stats.f_bavail) * Int(stats.f_frsize)
    }
}

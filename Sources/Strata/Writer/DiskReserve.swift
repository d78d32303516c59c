import Foundation
import Glibc

/// Space set aside beside the document (`PATH.reserve`, `[writer] disk_reserve_kb`) for
/// the moment a full disk would otherwise lose rows: a shutdown whose last batch cannot
/// be committed frees it, tries the commit once more, and parks what still cannot go in
/// the side file (`PATH.rejected`), which then has room. Made again at the next open
/// when there is space. Writer thread.
struct DiskReserve {
    let path: String
    let bytes: Int

    /// Makes the file if it is missing (allocated, not sparse: `posix_fallocate`).
    /// Returns false if the disk has no room for it (the engine goes on without).
    @discardableResult
    func ensure() -> Bool {
        guard bytes > 0 else { return true }
        var stats = stat()
        if stat(path, &stats) == 0 && Int(stats.st_size) >= bytes { return true }
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard posix_fallocate(fd, 0, off_t(bytes)) == 0, fsync(fd) == 0 else {
            unlink(path)
            return false
        }
        return true
    }

    /// Gives the space back to the filesystem. Returns the bytes freed.
    func release() -> Int {
        var stats = stat()
        guard stat(path, &stats) == 0, unlink(path) == 0 else { return 0 }
        return Int(stats.st_blocks) * 512
    }
}

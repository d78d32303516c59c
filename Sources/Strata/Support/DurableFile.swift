import Foundation

/// File steps that must survive a power cut in the order they were taken: a small file
/// written whole (temporary name, `fsync`, rename, the folder's `fsync`), a rename made
/// durable, a file's contents forced to disk. A repair (`Repair.swift`) is built of them.
/// Any thread; each call is one blocking system call or a few.
enum DurableFile {
    /// Writes `data` to `path` whole: a reader sees the old file or the new one, after a
    /// crash or a power cut too.
    static func write(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("create", temporary) }
        var written = 0
        let ok = data.withUnsafeBytes { bytes -> Bool in
            while written < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress.map { $0 + written }, bytes.count - written)
                if n < 0 { if errno == EINTR { continue }; return false }
                written += n
            }
            return fsync(fd) == 0
        }
        let error = failure("write", temporary)
        close(fd)
        guard ok else {
            unlink(temporary)
            throw error
        }
        try rename(temporary, to: path)
    }

    /// Renames `from` to `to` (replacing it) and syncs the folder, so the new name is on disk.
    static func rename(_ from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else { throw failure("rename \(from) to", to) }
        syncFolder(of: to)
    }

    /// Removes `path` if it is there, and syncs the folder.
    static func remove(_ path: String) {
        guard unlink(path) == 0 else { return }
        syncFolder(of: path)
    }

    /// Forces the contents of the file at `path` to disk.
    static func sync(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("fsync", path) }
    }

    /// Syncs the folder holding `path`: a file created, renamed or removed there is so on disk.
    static func syncFolder(of path: String) {
        syncFolder(URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// Syncs `folder` itself ("" is the current one), so that a rename in it survives a power loss.
    static func syncFolder(_ folder: String) {
        let fd = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    private static func failure(_ what: String, _ path: String) -> StoreError {
        StoreError(.write, message: "\(what) \(path): \(String(cString: strerror(errno)))", path: path)
    }
}

import Foundation

/// How a game saves a snapshot safely: a temporary file beside the save, written and
/// synced, renamed over the previous save, then the folder synced, so that a crash or a
/// power cut leaves the old save or the new one. Two sync requests a save.
enum SnapshotFile {
    /// Writes `bytes` as `name` in `directory`; returns the bytes written.
    static func save(_ bytes: [UInt8], as name: String, in directory: URL) -> Int {
        let temp = directory.appendingPathComponent(name + ".tmp").path
        let final = directory.appendingPathComponent(name).path
        let fd = Glibc.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        var written = 0
        bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let n = Foundation.write(fd, buffer.baseAddress! + written, buffer.count - written)
                if n <= 0 { break }
                written += n
            }
        }
        fsync(fd)
        Glibc.close(fd)
        rename(temp, final)
        let dir = Glibc.open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        fsync(dir)
        Glibc.close(dir)
        return written
    }
}

import Foundation

/// What the kernel says this process sent to storage (`/proc/self/io`, `write_bytes`):
/// 4 KiB page-cache pages dirtied, counted once per write-back. Beside the counting VFS's
/// bytes (what SQLite asked to write), it shows what the device is given: a WAL append
/// smaller than a page still dirties a whole one. nil where the kernel does not count it.
enum ProcessIO {
    static var writeBytes: Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
            return Int(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}

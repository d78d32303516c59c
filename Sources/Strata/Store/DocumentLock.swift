import Foundation

/// One owner per document: an exclusive `flock` on `PATH.lock`, beside the database,
/// held from before SQLite opens the file until the store closes.
///
/// Why `flock` on a file of its own:
/// - `flock` locks belong to an open file description, so a second ``Store`` in the same
///   process conflicts too, and the kernel drops the lock when its process dies (a
///   SIGKILLed owner never blocks the next open).
/// - POSIX `fcntl` locks, which SQLite uses on the database itself, belong to a process
///   and are released when *any* descriptor of the file closes. Locking a separate file
///   keeps the two apart (on Linux they do not interact on local file systems anyway).
///
/// The file holds the owner's process id, since when and its command line, so that the
/// refusal can name it. It is never deleted: removing a lock file while another process
/// waits to lock it would let two owners in.
final class DocumentLock: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` is only touched under `guardLock`.
    let path: String
    private let guardLock = Lock()
    private var descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// The lock file of the database at `location`.
    static func path(for location: StoreLocation) -> String { location.path + ".lock" }

    /// Takes ownership of the document, or throws ``StoreError/Code/locked`` naming the owner.
    static func acquire(for location: StoreLocation, now: Date = Date()) throws -> DocumentLock {
        let path = path(for: location)
        try FileManager.default.createDirectory(at: URL(fileURLWithPath: path).deletingLastPathComponent(),
                                                withIntermediateDirectories: true)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(.open, message: "cannot open the lock file \(path): \(String(cString: strerror(errno)))",
                             path: location.path)
        }
        guard lockExclusively(fd) else {
            let reason = errno
            let owner = readOwner(fd)
            close(fd)
            guard reason == EWOULDBLOCK else {
                throw StoreError(.open, message: "cannot lock \(path): \(String(cString: strerror(reason)))", path: location.path)
            }
            throw StoreError(.locked, message: "the document is open in \(owner?.description ?? "another process (owner unknown)")",
                             path: location.path)
        }
        let owner = DocumentOwner(pid: getpid(), since: Int64(now.timeIntervalSince1970 * 1000),
                                  command: CommandLine.arguments.joined(separator: " "))
        let text = Array((try? JSONEncoder().encode(owner)) ?? Data())
        _ = ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return DocumentLock(path: path, descriptor: fd)
    }

    /// `flock(LOCK_EX | LOCK_NB)`, tried again for up to 50 ms while the owner on record is
    /// this process. A lock this process just released can still be held for a moment: a
    /// child another thread is spawning shares the lock's open file description until its
    /// `exec` closes it (`O_CLOEXEC`). An engine of this process that really holds the
    /// document still holds it after the wait.
    private static func lockExclusively(_ fd: Int32) -> Bool {
        for attempt in 0 ..< 11 {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            let reason = errno
            guard reason == EWOULDBLOCK, attempt < 10, readOwner(fd)?.pid == getpid() else {
                errno = reason
                return false
            }
            usleep(5_000)
        }
        return false
    }

    /// Who owns the document now, read without taking it; nil if nobody does.
    static func owner(of location: StoreLocation) -> DocumentOwner? {
        let fd = open(path(for: location), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // A shared lock is refused while an owner holds the exclusive one.
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return nil
        }
        return readOwner(fd) ?? DocumentOwner(pid: 0, since: 0, command: "unknown")
    }

    private static func readOwner(_ fd: Int32) -> DocumentOwner? {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return try? JSONDecoder().decode(DocumentOwner.self, from: Data(bytes[0 ..< count]))
    }

    /// Gives the document up (idempotent). The lock file stays.
    func release() {
        guardLock.withLock {
            guard descriptor >= 0 else { return }
            close(descriptor)   // drops the flock
            descriptor = -1
        }
    }

    deinit { release() }
}

/// The process that owns a document (`DocumentLock`).
package struct DocumentOwner: Codable, Sendable, Equatable, CustomStringConvertible {
    public var pid: Int32
    /// Unix milliseconds.
    public var since: Int64
    public var command: String

    public var description: String {
        let started = Date(timeIntervalSince1970: Double(since) / 1000)
        let who = pid == getpid() ? "this process (another engine), pid \(pid)" : "process \(pid)"
        return "\(who) since \(ISO8601DateFormatter().string(from: started)) (\(command))"
    }
}

import Foundation

/// A file copied a bounded number of bytes at a time, with `sendfile(2)` (the kernel
/// copies, no bytes through this process; read and write where it cannot), into a new file
/// (never over one). ``BackupTask`` copies a checkpointed document's file this way between
/// batches; `strata backup` copies an idle document and its WAL. Writer thread, or a tool's.
final class FileCopy {
    let source: String
    let destination: String
    private var input: Int32
    private var output: Int32
    /// Bytes copied so far, and the source's size when the copy started (what it copies).
    private(set) var copied = 0
    let size: Int
    private(set) var steps = 0
    private(set) var longestStep: Duration = .zero

    init(from source: String, to destination: String) throws {
        self.source = source
        self.destination = destination
        input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            throw StoreError(.read, message: "cannot open \(source) to copy it: \(String(cString: strerror(errno)))", path: destination)
        }
        var status = stat()
        fstat(input, &status)
        size = Int(status.st_size)
        output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else {
            let error = StoreError(.write, message: "cannot create \(destination): \(String(cString: strerror(errno)))", path: destination)
            Glibc.close(input)
            input = -1
            throw error
        }
    }

    deinit { close() }

    /// Copies up to `bytes` more. Returns true once the whole file is copied.
    func step(bytes: Int) throws -> Bool {
        let stopwatch = MonotonicClock()
        let started = stopwatch.now()
        defer {
            steps += 1
            longestStep = max(longestStep, stopwatch.now().duration(since: started))
        }
        var left = min(bytes, size - copied)
        let start = copied
        // Starts the writeback of what this step wrote (the copy is synced once, later): dirty
        // pages left to pile up make the kernel throttle a later step, and the writer with it.
        defer { _ = posix_fadvise(output, off_t(start), off_t(copied - start), POSIX_FADV_DONTNEED) }
        while left > 0 {
            var n = sendfile(output, input, nil, left)
            if n < 0 && [EXDEV, ENOSYS, EINVAL, EOPNOTSUPP].contains(errno) { n = try readWrite(left) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let reason = n == 0 ? "the file ended early" : String(cString: strerror(errno))
                throw StoreError(.write, message: "copying \(source): \(reason)", path: destination)
            }
            copied += n
            left -= n
        }
        return copied >= size
    }

    /// One read and one write, where the kernel cannot copy between the two files.
    private func readWrite(_ count: Int) throws -> Int {
        var buffer = [UInt8](repeating: 0, count: min(count, 1 << 20))
        let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
        guard n > 0 else { return n }
        var written = 0
        while written < n {
            let w = buffer.withUnsafeBytes { write(output, $0.baseAddress.map { $0 + written }, n - written) }
            if w < 0 && errno == EINTR { continue }
            guard w > 0 else { return -1 }
            written += w
        }
        return n
    }

    func close() {
        if input >= 0 { Glibc.close(input) }
        if output >= 0 { Glibc.close(output) }
        input = -1
        output = -1
    }
}

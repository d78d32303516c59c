import Foundation

/// Writes a line to standard output at once: when stdout is a pipe, `print` would hold
/// it in a buffer until exit, and a watcher (or a test) would see nothing.
///
/// A closed stdout (`strata sim | head -1`) loses the line and nothing else: SIGPIPE is
/// ignored (``ignoreBrokenPipes()``) and the write's error with it.
func say(_ message: String) {
    writeAll(STDOUT_FILENO, message + "\n")
}

/// Writes a line to standard error.
func printError(_ message: String) {
    writeAll(STDERR_FILENO, message + "\n")
}

/// Writes all of `text` to `fd`, giving up quietly on an error (a closed pipe).
func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return }
        offset += n
    }
}

/// A reader that goes away (`| head -1`) must not kill the process: with SIGPIPE
/// ignored, a write to the closed pipe fails with EPIPE instead, and is dropped.
func ignoreBrokenPipes() {
    signal(SIGPIPE, SIG_IGN)
}

/// The commands' JSON: snake_case keys, sorted, indented.
func jsonEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.keyEncodingStrategy = .convertToSnakeCase
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    return encoder
}

/// Prints `value` as the commands' JSON.
func sayJSON<T: Encodable>(_ value: T) throws {
    say(String(decoding: try jsonEncoder().encode(value), as: UTF8.self))
}

import Foundation

/// Writes a line to standard output at once: when stdout is a pipe, `print` would hold
/// it in a buffer until exit, and a watcher (or a test) would see nothing.
func say(_ message: String) {
    FileHandle.standardOutput.write(Data((message + "\n").utf8))
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

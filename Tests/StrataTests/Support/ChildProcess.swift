import Foundation

/// A finished child process: its status and what it printed.
struct ChildProcess {
    var status: Int32
    var stdout: String
    var stderr: String
    /// It was ended by a signal (a trap is SIGILL or SIGTRAP), not by exiting: `status` is the signal.
    var signalled = false

    /// Runs `executable` to completion.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    in directory: URL? = nil) throws -> ChildProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let errors = OutputCollector(err.fileHandleForReading)   // drained as it comes: no pipe can fill up
        try process.run()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        _ = eventually(timeout: .seconds(5)) { errors.isClosed }
        return ChildProcess(status: process.terminationStatus, stdout: stdout, stderr: errors.text,
                            signalled: process.terminationReason == .uncaughtSignal)
    }

    /// Runs the `strata` executable.
    static func strata(_ arguments: [String], environment: [String: String]? = nil, in directory: URL? = nil) throws -> ChildProcess {
        try run(try strataExecutable(), arguments, environment: environment, in: directory)
    }
}

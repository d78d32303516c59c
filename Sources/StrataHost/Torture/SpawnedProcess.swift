import Foundation

/// A child of the sync checker, started with `posix_spawn` and reaped with `waitpid`.
///
/// Not Foundation's `Process`: it learns that a child ended when a socket the child
/// inherited closes, and in the checker (a server restarted, devices killed and started
/// again, dozens of children) a child that has exited was at times never noticed: the
/// checker waited on a zombie. Here the end is what `waitpid` says. Every descriptor above
/// 2 is closed in the child (through bash, which then execs the command: same pid), so no
/// child holds another's files or sockets.
final class SpawnedProcess {
    let pid: pid_t
    /// The raw wait status, once reaped.
    private var status: Int32?

    /// Starts `command` with stdin from /dev/null and stdout and stderr appended to
    /// `output` (or /dev/null).
    init(_ command: [String], output: String? = nil) throws {
        let argv = ["/bin/bash", "-c", #"for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null; done; exec "$@""#, "bash"]
            + command
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/bin/bash", &actions, &attributes, cArguments, environ)
        guard rc == 0 else { throw TortureSetupError("posix_spawn \(command.first ?? ""): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    var isRunning: Bool {
        guard status == nil else { return false }
        var raw: Int32 = 0
        let reaped = waitpid(pid, &raw, WNOHANG)
        if reaped == pid || (reaped < 0 && errno == ECHILD) { status = reaped == pid ? raw : 0 }
        return status == nil
    }

    func signal(_ sig: Int32) {
        if isRunning { kill(pid, sig) }
    }

    /// Waits for the end; false if it did not come within `seconds`.
    @discardableResult
    func wait(seconds: Double = .infinity) -> Bool {
        let deadline = Date(timeIntervalSinceNow: min(seconds, 1e9))
        while isRunning {
            if Date() >= deadline { return false }
            usleep(10_000)
        }
        return true
    }

    /// The exit code, or nil while running or if a signal ended it.
    var exitCode: Int32? {
        guard !isRunning, let status, status & 0x7F == 0 else { return nil }
        return (status >> 8) & 0xFF
    }

    /// The signal that ended it, if one did.
    var endingSignal: Int32? {
        guard !isRunning, let status, status & 0x7F != 0, status & 0x7F != 0x7F else { return nil }
        return status & 0x7F
    }

    /// Runs `command` to its end; throws with its output if it fails.
    @discardableResult
    static func run(_ command: [String]) throws -> String {
        let output = NSTemporaryDirectory() + "strata-torture-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        defer { unlink(output) }
        let process = try SpawnedProcess(command, output: output)
        process.wait()
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard process.exitCode == 0 else {
            throw TortureSetupError("\(command.joined(separator: " ")): \(text.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return text
    }
}

import Foundation

/// A tool run through bash with every descriptor above 2 closed (a server it starts holds
/// none of this process's pipes), then waited for with `waitpid`. Both test targets use it.
///
/// Not Foundation's `Process`: that learns a child ended when a socket the child inherited
/// closes, and closing every descriptor closes that socket too. Foundation then waited for
/// the living child on the one thread that watches every child, and no other child's end
/// was seen until it ended: a test waited on a zombie while `openssl s_client` waited on
/// the service.
public enum Spawned {
    /// Starts `script` (bash, `$@` = `arguments`) with stdin, stdout and stderr on
    /// /dev/null and only `environment`; returns its pid.
    public static func start(_ script: String, _ arguments: [String], environment: [String: String]) throws -> pid_t {
        let closing = #"for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null; done; "#
        let argv = ["/bin/bash", "-c", closing + script, "bash"] + arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in cArguments + cEnvironment { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/bin/bash", &actions, &attributes, cArguments, cEnvironment)
        guard rc == 0 else { throw SpawnError(description: "posix_spawn \(arguments.first ?? ""): \(String(cString: strerror(rc)))") }
        return pid
    }

    /// Waits for `pid` to end (blocking this thread); its exit status, or 128 + the signal.
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// A tool that could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    public var description: String
}

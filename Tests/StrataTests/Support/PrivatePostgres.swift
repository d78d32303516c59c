import Foundation
import StrataTestSupport

/// A private PostgreSQL server for the sync tests: Debian's `postgresql` package
/// (`make` installs it), `initdb` and `pg_ctl` in a temporary folder, listening on a
/// Unix socket there only (no TCP port). Trust authentication, user `strata`.
///
/// PostgreSQL refuses to run as root: as root, the server's commands run as the
/// `postgres` user the package creates (`runuser`), and the folder is handed to it.
/// Only the server started here is ever stopped.
final class PrivatePostgres {
    let folder: String
    private let bin: String
    private var running = false

    /// The server's URL (the `postgres` database over the socket).
    var url: String { "postgresql://strata@/postgres?host=\(folder)" }

    init() throws {
        guard let version = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?
            .compactMap(Int.init).max() else { throw Failure("no PostgreSQL under /usr/lib/postgresql: run `make deps`") }
        bin = "/usr/lib/postgresql/\(version)/bin"
        var template = Array("/tmp/strata-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure("mkdtemp failed") }
        folder = String(cString: made)
        chmod(folder, 0o755)
        if getuid() == 0 {
            _ = try ChildProcess.run("/bin/chown", ["postgres:postgres", folder])
        }
        try run("initdb", ["-D", "\(folder)/data", "-U", "strata", "--auth=trust", "-E", "UTF8", "--no-sync"])
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Starts the server and waits until it accepts connections.
    func start() throws {
        // The server must not inherit this process's descriptors (a pipe of another test's
        // child would stay open for as long as it runs): ``Spawned`` closes every one above 2.
        let command = (getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + ["\(bin)/pg_ctl",
            "-D", "\(folder)/data", "-l", "\(folder)/log", "-w", "-t", "60",
            "-o", "-k \(folder) -c listen_addresses='' -c fsync=off -c max_connections=40", "start"]
        let pid = try Spawned.start(#"exec "$@""#, command, environment: ProcessInfo.processInfo.environment)
        guard Spawned.wait(pid) == 0 else {
            throw Failure("pg_ctl start failed: \((try? String(contentsOfFile: "\(folder)/log", encoding: .utf8)) ?? "")")
        }
        running = true
    }

    /// Stops it at once (connections broken, as a crash or a network cut would).
    func stop() {
        guard running else { return }
        running = false
        _ = try? run("pg_ctl", ["-D", "\(folder)/data", "-m", "immediate", "-w", "stop"])
    }

    /// Runs SQL with psql; returns its unaligned output.
    @discardableResult
    func sql(_ statement: String) throws -> String {
        try run("psql", ["-h", folder, "-U", "strata", "-d", "postgres", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", statement])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String]) throws -> String {
        let result = getuid() == 0
            ? try ChildProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(bin)/\(tool)"] + arguments)
            : try ChildProcess.run("\(bin)/\(tool)", arguments)
        guard result.status == 0 else { throw Failure("\(tool) \(arguments.joined(separator: " ")): \(result.stderr)\(result.stdout)") }
        return result.stdout
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

extension PrivatePostgres {
    /// One server for the tests that neither stop it nor read past their own document
    /// (each test names a document of its own): started at the first use, stopped when the
    /// test process exits.
    static func shared() throws -> PrivatePostgres { try sharedServer.get() }

    nonisolated(unsafe) private static let sharedServer: Result<PrivatePostgres, any Error> = {
        let result = Result { try PrivatePostgres() }
        atexit {
            guard case .success(let server) = PrivatePostgres.sharedServer else { return }
            server.stop()
            try? FileManager.default.removeItem(atPath: server.folder)
        }
        return result
    }()
}

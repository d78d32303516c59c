import Foundation
import StrataTestSupport

/// A private PostgreSQL server for the service's tests: `initdb` and `pg_ctl` from Debian's
/// `postgresql` (`make` installs it) in a temporary folder, a Unix socket there only, trust
/// authentication for user `strata`. As root, its commands run as `postgres` (`runuser`).
/// One per test process (``shared``), each test on documents of its own.
final class TestPostgres: Sendable {
    let folder: String
    let bin: String

    var url: String { "postgresql://strata@/postgres?host=\(folder)" }

    static let shared: Result<TestPostgres, any Error> = Result { try TestPostgres() }

    init() throws {
        guard let version = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.compactMap(Int.init).max() else {
            throw TestFailure("no PostgreSQL under /usr/lib/postgresql: run `make deps`")
        }
        bin = "/usr/lib/postgresql/\(version)/bin"
        var template = Array("/tmp/strata-server-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        folder = String(cString: made)
        chmod(folder, 0o755)
        if getuid() == 0 { try Self.run("/bin/chown", ["postgres:postgres", folder]) }
        try run("initdb", ["-D", "\(folder)/data", "-U", "strata", "--auth=trust", "-E", "UTF8", "--no-sync"])
        try start()
        atexit_stop(self)
    }

    /// Starts the server (again) and waits until it accepts connections.
    func start() throws {
        try run("pg_ctl", ["-D", "\(folder)/data", "-l", "\(folder)/log", "-w", "-t", "60",
                           "-o", "-k \(folder) -c listen_addresses='' -c fsync=off -c max_connections=60", "start"])
    }

    /// Stops it at once (a test with a server of its own, and the process's end).
    func stop() throws {
        try run("pg_ctl", ["-D", "\(folder)/data", "-m", "immediate", "-w", "stop"])
    }

    /// How many connections `application` holds now.
    func connections(of application: String) throws -> Int {
        Int(try sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(application)'")) ?? -1
    }

    func sql(_ statement: String) throws -> String {
        try run("psql", ["-h", folder, "-U", "strata", "-d", "postgres", "-Atc", statement]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        getuid() == 0
            ? try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", "\(bin)/\(tool)"] + arguments)
            : try Self.run("\(bin)/\(tool)", arguments)
    }

    /// Runs a command with every descriptor above 2 closed (``Spawned``: a server started
    /// here must not hold this process's pipes), its output in a file, from `/`: a tool run
    /// as `postgres` in a folder only root may enter (a clone in `mktemp -d`) says so on
    /// stderr, which would be read as its output.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let output = NSTemporaryDirectory() + "strata-server-test-\(UUID().uuidString)"
        defer { unlink(output) }
        let pid = try Spawned.start(#"cd / && exec "$@" > "$OUT" 2>&1"#, [executable] + arguments,
                                    environment: ["OUT": output, "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"])
        let status = Spawned.wait(pid)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else { throw TestFailure("\(executable) \(arguments.joined(separator: " ")): \(text)") }
        return text
    }
}

/// Stops the server and removes its folder when the test process ends.
private func atexit_stop(_ server: TestPostgres) {
    nonisolated(unsafe) let stop = { _ = try? server.stop(); try? FileManager.default.removeItem(atPath: server.folder) }
    stopAtExit.append(stop)
    if stopAtExit.count == 1 { atexit { for stop in stopAtExit { stop() } } }
}

nonisolated(unsafe) private var stopAtExit: [() -> Void] = []

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

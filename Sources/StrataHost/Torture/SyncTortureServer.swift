import Foundation

/// The sync checker's PostgreSQL server: private (initdb in the run's folder), listening
/// on TCP on every address (the devices reach it through their network namespaces) and a
/// Unix socket (the checker's own queries), trust authentication, user `strata`. As root
/// it runs as the `postgres` user (PostgreSQL refuses root). It can be stopped hard (as a
/// machine that loses power: `pg_ctl stop -m immediate`) and started again.
final class SyncTortureServer {
    let folder: URL
    let port: Int
    private let bin: String

    init(folder: URL, port: Int) throws {
        self.folder = folder
        self.port = port
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let newest = versions.sorted(by: { $0.compare($1, options: .numeric) == .orderedAscending }).last else {
            throw TortureSetupError("no PostgreSQL under /usr/lib/postgresql (Debian's postgresql package; make installs it)")
        }
        bin = "/usr/lib/postgresql/\(newest)/bin"
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0 { try run(["/bin/chown", "postgres:postgres", folder.path]) }
        let data = folder.appendingPathComponent("data").path
        if !FileManager.default.fileExists(atPath: data) {
            try asOwner("\(bin)/initdb", ["-D", data, "-U", "strata", "--auth=trust", "-E", "UTF8", "--no-sync"])
            let hba = "host all all 10.231.0.0/16 trust\nhost all all 127.0.0.1/32 trust\n"
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/pg_hba.conf"))
            handle.seekToEndOfFile()
            handle.write(Data(hba.utf8))
            try handle.close()
        }
        try start()
    }

    /// A TCP port nothing listens on now (the kernel's pick for port 0).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = INADDR_ANY
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : 54_321
    }

    /// The URL a device in namespace `index` (``SyncTortureNetwork``) connects to.
    func url(forDevice index: Int) -> String {
        "postgresql://strata@\(SyncTortureNetwork.hostAddress(index)):\(port)/postgres"
    }

    /// Its URL on the Unix socket, for what runs beside the checker (the sync service).
    var localURL: String { "postgresql://strata@/postgres?host=\(folder.path)&port=\(port)" }

    func start() throws {
        try asOwner("\(bin)/pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-l", folder.appendingPathComponent("log").path,
                                      "-w", "-o", "-k \(folder.path) -c listen_addresses='*' -p \(port) -c max_connections=60 -c fsync=off",
                                      "start"])
    }

    /// Stopped as by a power loss: no checkpoint, connections cut.
    func stopHard() throws {
        try asOwner("\(bin)/pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
    }

    func stop() {
        try? asOwner("\(bin)/pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "fast", "-w", "stop"])
    }

    /// Runs `sql` through psql on the Unix socket: rows of tab-separated fields.
    func query(_ sql: String) throws -> [[String]] {
        let output = try run(["\(bin)/psql", "-h", folder.path, "-p", "\(port)", "-U", "strata", "-d", "postgres", "-At", "-F", "\t",
                                             "-v", "ON_ERROR_STOP=1", "-c", sql])
        return output.split(separator: "\n", omittingEmptySubsequences: true).map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    private func asOwner(_ tool: String, _ arguments: [String]) throws {
        try run((getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + [tool] + arguments)
    }

    @discardableResult
    private func run(_ command: [String]) throws -> String {
        try SpawnedProcess.run(command)
    }
}

/// Something the sync checker needs is missing (a tool, root, a namespace).
struct TortureSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

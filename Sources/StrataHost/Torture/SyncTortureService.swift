import Foundation

/// The sync checker's sync service (`--sync-service PATH`): a `strata-server` process in
/// front of the checker's PostgreSQL, on every address over HTTPS, as a studio would run
/// it. Its certificate (made here by `openssl`) names each device's host address; the
/// devices trust it through their system CA bundle (``trustBundle``, bound over theirs in
/// their namespace), as a shipped game trusts a public CA. Each device is a subject of its
/// own, a writer of the run's document, with a token signed here. The checker kills it
/// (SIGKILL) and starts it again on the same port; a start while PostgreSQL is down waits
/// for it (`[database] start_wait_secs`), as an instance restarted beside its database would.
final class SyncTortureService {
    let binary: String
    let folder: URL
    let port: Int
    private let database: String
    private var process: SpawnedProcess?
    /// The log's length at the last start: what it says after is that start's.
    private var logged = 0

    private var certificate: String { folder.appendingPathComponent("cert.pem").path }
    private var key: String { folder.appendingPathComponent("key.pem").path }
    private var secret: String { folder.appendingPathComponent("secret").path }
    private var logPath: String { folder.appendingPathComponent("service.log").path }
    /// The system's CA bundle with this service's certificate added.
    var trustBundle: String { folder.appendingPathComponent("bundle.pem").path }
    /// Where Debian's libcurl, URLSession's TLS on Linux, reads the CAs it trusts.
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    init(binary: String, folder: URL, database: String, devices: Int) throws {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw TortureSetupError("--sync-service \(binary): not an executable (make server builds .build/release/strata-server)")
        }
        guard FileManager.default.fileExists(atPath: Self.systemBundle) else {
            throw TortureSetupError("no CA bundle at \(Self.systemBundle) (Debian's ca-certificates; make installs it)")
        }
        self.binary = binary
        self.folder = folder
        self.database = database
        port = SyncTortureServer.freePort()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let names = (1 ... devices).map { "IP:\(SyncTortureNetwork.hostAddress($0))" }.joined(separator: ",")
        try SpawnedProcess.run(["/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=strata-sync-checker",
                                "-addext", "subjectAltName=\(names)"])
        let system = try Data(contentsOf: URL(fileURLWithPath: Self.systemBundle))
        try (system + Data(contentsOf: URL(fileURLWithPath: certificate))).write(to: URL(fileURLWithPath: trustBundle))
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0 ... 255) }
        try Data(bytes.map { String(format: "%02x", $0) }.joined().utf8).write(to: URL(fileURLWithPath: secret))
        try start()
        try waitUntilListening()
    }

    /// The URL device `index` (``SyncTortureNetwork``) syncs through.
    func url(forDevice index: Int) -> String { "https://\(SyncTortureNetwork.hostAddress(index)):\(port)" }

    /// Starts the service (which waits for PostgreSQL when that is down too).
    func start() throws {
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }  // the log is for reading after; the run goes on without it
        logged = (try? Data(contentsOf: URL(fileURLWithPath: logPath)).count) ?? 0
        process = try SpawnedProcess([binary, "serve", "--database", database, "--listen", "0.0.0.0:\(port)",
                                      "--hmac-secret-file", secret, "--tls-certificate", certificate, "--tls-key", key,
                                      "--log-level", "warning"], output: logPath)
    }

    /// Waits for the last start's "listening" line: a service that ended, or did not say it
    /// within `seconds`, is an error with what it said.
    func waitUntilListening(seconds: Double = 60) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let said = (try? Data(contentsOf: URL(fileURLWithPath: logPath)).dropFirst(logged)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            if said.contains("listening on") { return }
            if process?.isRunning != true { throw TortureSetupError("strata-server did not start: \(said)") }
            usleep(50_000)
        }
        throw TortureSetupError("strata-server did not say it listens within \(Int(seconds)) s")
    }

    /// SIGKILL: requests in flight are cut, nothing is flushed.
    func kill() {
        guard let process, process.isRunning else { return }
        process.signal(SIGKILL)
        process.wait()
        self.process = nil
    }

    var isRunning: Bool { process?.isRunning ?? false }

    /// Makes `subject` a writer of `document` and writes its token to `tokenFile`.
    func admit(_ subject: String, to document: String, tokenFile: String) throws {
        try SpawnedProcess.run([binary, "members", "add", "--database", database, "--document", document, "--subject", subject, "--role", "writer"])
        let token = try SpawnedProcess.run([binary, "token", "--hmac-secret-file", secret, "--subject", subject, "--ttl", "172800"])
        try Data(token.trimmingCharacters(in: .whitespacesAndNewlines).utf8).write(to: URL(fileURLWithPath: tokenFile))
    }

    func stop() {
        guard let process, process.isRunning else { return }
        process.signal(SIGTERM)
        if !process.wait(seconds: 10) { process.signal(SIGKILL); process.wait() }
        self.process = nil
    }
}

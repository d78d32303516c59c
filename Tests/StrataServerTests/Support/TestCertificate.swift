import Foundation
import StrataTestSupport

/// A self-signed certificate for 127.0.0.1 and localhost (P-256, one day), made by the
/// `openssl` command (`make` installs it), in a folder of its own; and a CA bundle that
/// trusts it on top of the system's, for a device run in a mount namespace of its own
/// where that bundle stands in for the system's (`trusting(_:)`).
struct TestCertificate {
    let folder: String
    var certificate: String { "\(folder)/cert.pem" }
    var key: String { "\(folder)/key.pem" }
    var bundle: String { "\(folder)/bundle.pem" }

    /// Where Debian's libcurl (URLSession's TLS on Linux) reads the trusted CAs.
    static let systemBundle = "/etc/ssl/certs/ca-certificates.crt"

    init() throws {
        folder = NSTemporaryDirectory() + "strata-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try TestPostgres.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                  "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/CN=localhost",
                                                  "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        let system = (try? Data(contentsOf: URL(fileURLWithPath: Self.systemBundle))) ?? Data()
        try (system + Data(contentsOf: URL(fileURLWithPath: certificate))).write(to: URL(fileURLWithPath: bundle))
    }

    func remove() { try? FileManager.default.removeItem(atPath: folder) }

    /// Whether this machine can give a process a mount namespace (root, `unshare`).
    static var canTrustPrivately: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
            && FileManager.default.fileExists(atPath: systemBundle)
    }

    /// `command` run where the system's CA bundle is this one: a private mount namespace.
    func trusting(_ command: [String]) -> [String] {
        ["/usr/bin/unshare", "-m", "/bin/sh", "-c", #"mount --bind "$0" "$1" && shift && exec "$@""#, bundle, Self.systemBundle] + command
    }

    /// One HTTP/1.1 exchange over TLS by `openssl s_client`, which checks the certificate
    /// against this one: what came back (empty when the handshake failed). Through files,
    /// started and waited for as ``Spawned`` says, off the test's threads (the service in
    /// this process answers on them).
    func exchange(port: Int, _ request: String, options: [String] = []) async throws -> String {
        let input = NSTemporaryDirectory() + "strata-tls-in-\(UUID().uuidString)"
        let output = NSTemporaryDirectory() + "strata-tls-out-\(UUID().uuidString)"
        defer { unlink(input); unlink(output) }
        try Data(request.utf8).write(to: URL(fileURLWithPath: input))
        let pid = try Spawned.start(#"exec timeout 60 "$@" < "$IN" > "$OUT""#,
                                    ["/usr/bin/openssl", "s_client", "-quiet", "-verify_return_error", "-CAfile", certificate,
                                     "-verify_ip", "127.0.0.1", "-connect", "127.0.0.1:\(port)"] + options,
                                    environment: ["IN": input, "OUT": output, "PATH": "/usr/bin:/bin"])
        _ = try await offThread { Spawned.wait(pid) }
        return (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    }
}

import Foundation
import StrataWire
import Testing
@testable import StrataServer

/// The service's own TLS (`[server] tls_certificate` and `tls_key`): OpenSSL under the HTTP
/// codec, checked from outside by `openssl s_client`, which verifies the certificate.
@Suite struct TLSTests {
    func tlsService(_ certificate: TestCertificate, _ adjust: @escaping (inout ServerConfig) -> Void = { _ in }) async throws -> TestService {
        try await TestService {
            $0.tlsCertificate = certificate.certificate
            $0.tlsKey = certificate.key
            adjust(&$0)
        }
    }

    /// An HTTP/1.1 request with its body, the connection closed after the answer.
    func request(_ method: String, _ path: String, token: String? = nil, body: Data = Data()) -> String {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if !body.isEmpty { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        return head + "\r\n" + String(decoding: body, as: UTF8.self)
    }

    @Test func withACertificateTheServiceAnswersHTTPSAndNotPlainHTTP() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let service = try await tlsService(certificate)
        defer { Task { await service.stop() } }
        for version in ["-tls1_2", "-tls1_3"] {
            let answer = try await certificate.exchange(port: service.port, request("GET", "/healthz"), options: [version])
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(version): \(answer)")
        }
        // Plain HTTP to that port gets no HTTP answer, and the connection is closed.
        let plain = try RawConnection(port: service.port)
        plain.send(Array(request("GET", "/healthz").utf8))
        let (closed, received) = plain.readUntilClosed(limit: 20)
        #expect(closed)
        #expect(!String(decoding: received, as: UTF8.self).contains("HTTP/1.1"))
    }

    /// 40 operations of 1 KB: a push body and a pull answer of several TLS records each.
    @Test func aPushAndAPullOfManyRecordsGoThroughWhole() async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let service = try await tlsService(certificate)
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        let token = try service.token("alice")
        let node = UUID()
        let operations = (1...40).map { operation(node: node, seq: Int64($0), payload: 1024) }
        let pushBody = try JSONEncoder().encode(SyncWire.PushRequest(operations: operations))
        #expect(pushBody.count > 3 * 16_384)
        let pushed = try await certificate.exchange(port: service.port, request("POST", SyncWire.path(document: document, "push"), token: token, body: pushBody))
        #expect(pushed.hasPrefix("HTTP/1.1 200"), "\(pushed.prefix(300))")
        #expect(try service.stored(document) == 40)

        let pullBody = try JSONEncoder().encode(SyncWire.PullRequest(exclude: UUID(), clock: [:], after: 0, limit: 100, waitMilliseconds: 0))
        let pulled = try await certificate.exchange(port: service.port, request("POST", SyncWire.path(document: document, "pull"), token: token, body: pullBody))
        #expect(pulled.hasPrefix("HTTP/1.1 200"), "\(pulled.prefix(300))")
        let body = pulled.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        let page = try JSONDecoder().decode(SyncWire.PullResponse.self, from: Data(body.utf8))
        #expect(page.operations.map(\.seq) == Array(1...40))
        #expect(page.operations.allSatisfy { $0.payload == Data(repeating: 7, count: 1024) })
    }

    /// A client that starts (a request's first line, a handshake's first bytes) and then
    /// sends nothing is closed at the idle timeout: it cannot hold a connection.
    @Test(arguments: [false, true]) func aClientThatStartsAndGoesSilentIsCutOff(overTLS: Bool) async throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let service = overTLS ? try await tlsService(certificate) { $0.idleTimeout = .seconds(1) }
                              : try await TestService { $0.idleTimeout = .seconds(1) }
        defer { Task { await service.stop() } }
        let connection = try RawConnection(port: service.port)
        // A TLS record header announcing a ClientHello of 512 bytes, and 5 of them.
        connection.send(overTLS ? [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03]
                                : Array("POST /v1/documents/x/push HTTP/1.1\r\nHost: localhost\r\n".utf8))
        let (closed, _) = connection.readUntilClosed(limit: 30)
        #expect(closed, "still open 30 s after a 1 s idle timeout")
    }

    @Test func aCertificateOrKeyThatCannotServeStopsTheStartAndNamesTheSetting() async throws {
        let certificate = try TestCertificate()
        let other = try TestCertificate()
        defer { certificate.remove(); other.remove() }
        let cases: [(certificate: String, key: String, setting: String)] = [
            (certificate.folder + "/missing.pem", certificate.key, "server.tls_certificate"),
            (certificate.key, certificate.key, "server.tls_certificate"),
            (certificate.certificate, certificate.certificate, "server.tls_key"),
            (certificate.certificate, other.key, "server.tls_key"),
        ]
        for (file, key, setting) in cases {
            do {
                let service = try await TestService { $0.tlsCertificate = file; $0.tlsKey = key }
                await service.stop()
                Issue.record("\(file) + \(key) started")
            } catch let error as ServerConfigError {
                #expect(error.key == setting, "\(error)")
            }
        }
    }

    @Test func plainHTTPListensOnLoopbackOnlyAndTLSAnywhere() throws {
        var config = ServerConfig()
        config.databaseURL = "postgresql://strata@/postgres"
        config.hmacSecretFile = "/dev/null"
        try config.setListen("0.0.0.0:8443", key: "--listen")
        #expect(throws: ServerConfigError.self) { try config.validate() }
        config.tlsCertificate = "cert.pem"
        #expect(throws: ServerConfigError.self) { try config.validate() }  // a certificate needs its key
        config.tlsKey = "key.pem"
        try config.validate()
    }
}

import CoreMetrics
import Foundation
import Prometheus

/// `strata sim --metrics-port`: the engine's swift-metrics figures in Prometheus' text
/// format at `http://127.0.0.1:PORT/metrics`, through swift-prometheus.
///
/// A deliberately small HTTP/1.1 server on a thread of its own (`strata.metrics.http`):
/// one connection at a time, `GET /metrics` only, the connection closed after each
/// answer, every read and write bounded by a 2 s socket timeout. A scraper needs no more.
final class MetricsServer: @unchecked Sendable {
    // @unchecked Sendable: `socket` is set before the thread starts and closed by `stop`.
    let registry: PrometheusCollectorRegistry
    /// The port it listens on (the one the kernel picked, for port 0).
    let port: Int
    private let socket: Int32
    private var thread: Thread?

    /// Bootstraps swift-metrics with a Prometheus registry (once per process) and listens
    /// on 127.0.0.1:`port` (0: any free port).
    static func start(port: Int) throws -> MetricsServer {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let server = try MetricsServer(registry: registry, port: port)
        server.start()
        return server
    }

    init(registry: PrometheusCollectorRegistry, port: Int) throws {
        self.registry = registry
        let fd = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw MetricsServerError("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw MetricsServerError("cannot listen on 127.0.0.1:\(port): \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.socket = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    private func start() {
        let thread = Thread { [self] in serve() }
        thread.name = "strata.metrics.http"
        self.thread = thread
        thread.start()
    }

    /// Stops listening (the thread's `accept` fails and it ends).
    func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }

    private func serve() {
        while true {
            let client = accept(socket, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return   // closed by `stop`
            }
            answer(client)
            close(client)
        }
    }

    private func answer(_ client: Int32) {
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // The request line and headers: up to the blank line (8 KiB at most).
        var request = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1024)
        while request.count < 8192, !request.ends(with: Array("\r\n\r\n".utf8)) {
            let count = recv(client, &chunk, chunk.count, 0)
            guard count > 0 else { return }
            request += chunk[0 ..< count]
        }
        let line = String(decoding: request.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        let response: [UInt8]
        if parts.count >= 2, parts[0] == "GET", parts[1] == "/metrics" || parts[1].hasPrefix("/metrics?") {
            response = Self.response(status: "200 OK", type: "text/plain; version=0.0.4; charset=utf-8",
                                     body: registry.emitToBuffer())
        } else {
            response = Self.response(status: "404 Not Found", type: "text/plain; charset=utf-8",
                                     body: Array("only GET /metrics is served here\n".utf8))
        }
        var sent = 0
        while sent < response.count {
            let count = response[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return }
            sent += count
        }
    }

    static func response(status: String, type: String, body: [UInt8]) -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
    }
}

struct MetricsServerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

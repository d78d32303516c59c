import Foundation

/// A TCP connection to a loopback port with nothing on top: for clients that misbehave
/// (send half a request or half a handshake, then nothing).
final class RawConnection {
    private let socket: Int32

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TestFailure("no socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(socket); throw TestFailure("cannot connect to port \(port)") }
    }

    deinit { close(socket) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// What arrives within `milliseconds` (nothing if nothing did, or the connection closed).
    func read(waiting milliseconds: Int32) -> [UInt8] {
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(socket, &buffer, buffer.count, 0)
        return count > 0 ? Array(buffer.prefix(count)) : []
    }

    /// Reads until the server closes the connection or `limit` passes: whether it closed,
    /// and what it sent.
    func readUntilClosed(limit: TimeInterval) -> (closed: Bool, received: [UInt8]) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(limit)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { return (true, received) }
            received += buffer.prefix(count)
        }
        return (false, received)
    }
}

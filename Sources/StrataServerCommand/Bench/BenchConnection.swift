import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One virtual device's HTTP/1.1 connection to the service (keep-alive, one request at a
/// time), on SwiftNIO: ten thousand of them fit in one process, which URLSession's would not.
struct BenchConnection {
    typealias Channel = NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>

    /// Opens a connection and runs `body` with it; closed when `body` returns.
    static func with<T: Sendable>(port: Int, _ body: (inout Exchange) async throws -> T) async throws -> T {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try Channel(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var exchange = Exchange(inbound: inbound.makeAsyncIterator(), outbound: outbound)
            return try await body(&exchange)
        }
    }

    struct Exchange {
        var inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
        let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>

        /// One request; its status and body.
        mutating func send(_ method: HTTPMethod, _ path: String, token: String, body: [UInt8]) async throws -> (Int, [UInt8]) {
            var headers = HTTPHeaders()
            headers.add(name: "Host", value: "127.0.0.1")
            headers.add(name: "Authorization", value: "Bearer \(token)")
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.count))
            try await outbound.write(.head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)))
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
            try await outbound.write(.end(nil))
            var status = 0
            var received: [UInt8] = []
            while let part = try await inbound.next() {
                switch part {
                case .head(let head): status = Int(head.status.code)
                case .body(let buffer): received += buffer.readableBytesView
                case .end: return (status, received)
                }
            }
            throw BenchError("the connection closed mid-answer")
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

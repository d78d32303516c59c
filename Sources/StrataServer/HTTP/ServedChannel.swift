import HummingbirdCore
import Logging
import NIOCore

/// A device's connection to the service: reads start small (a waiting pull keeps what it
/// read, and most requests are a few hundred bytes), TLS first in the pipeline when the
/// service has a certificate, then whatever the base channel (HTTP/1.1) sets up.
struct ServedChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let tls: TLSContext?

    /// Reads of 512 bytes at first, growing to 64 KB while they fill (a big push), and
    /// shrinking again after.
    static var reads: AdaptiveRecvByteBufferAllocator { AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536) }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.syncOptions?.setOption(.recvAllocator, value: Self.reads)
            if let tls { try channel.pipeline.syncOperations.addHandler(TLSServerHandler(context: tls)) }
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

import CStrataTLS
import NIOCore

/// TLS for one connection, first in its pipeline, on OpenSSL through two memory BIOs:
/// ciphertext from the socket goes into `incoming`, and what `SSL_read` makes of it goes
/// up to the HTTP codec as plaintext; plaintext from the codec goes through `SSL_write`,
/// and what lands in `outgoing` goes down to the socket. OpenSSL never touches the socket.
///
/// Owned by its channel's event loop. A handshake that fails, or a record that does not
/// decrypt, closes the connection (OpenSSL has queued its alert, which is sent first);
/// a client's close_notify closes it too.
final class TLSServerHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let ssl: OpaquePointer
    private let incoming: OpaquePointer
    private let outgoing: OpaquePointer
    private var established = false
    private var finished = false
    private var shutDown = false
    /// Writes that came before the handshake ended, and whether a flush came with them.
    private var waiting: [(ByteBuffer, EventLoopPromise<Void>?)] = []
    private var flushWaiting = false

    /// The largest plaintext one `SSL_read` hands up (a TLS record's most).
    private static let recordSize = 16_384

    init(context: TLSContext) throws {
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else { throw TLSFailure("no connection: \(TLSContext.lastError())") }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSFailure("no memory buffer for a connection")
        }
        SSL_set_bio(ssl, incoming, outgoing)  // the connection owns both now (and holds the context)
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
    }

    deinit { SSL_free(ssl) }

    // MARK: Inbound: ciphertext in, plaintext up

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !finished else { return }
        let buffer = unwrapInboundIn(data)
        guard buffer.readableBytes > 0 else { return }
        let taken = buffer.withUnsafeReadableBytes { BIO_write(incoming, $0.baseAddress, Int32(clamping: $0.count)) }
        guard taken == buffer.readableBytes else { return fail(context) }
        advance(context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        finished = true
        let dropped = waiting
        waiting = []
        for (_, promise) in dropped { promise?.fail(ChannelError.ioOnClosedChannel) }
        context.fireChannelInactive()
    }

    /// The handshake while it lasts, then every whole record that has arrived.
    private func advance(_ context: ChannelHandlerContext) {
        if !established {
            ERR_clear_error()
            let result = SSL_do_handshake(ssl)
            send(context, flush: true)
            guard result == 1 else {
                if wantsMore(SSL_get_error(ssl, result)) { return }
                return fail(context)
            }
            established = true
            let before = waiting
            waiting = []
            for (buffer, promise) in before { encrypt(context, buffer, promise) }
            if flushWaiting { flushWaiting = false; context.flush() }
        }
        while !finished {
            ERR_clear_error()
            var plaintext = context.channel.allocator.buffer(capacity: Self.recordSize)
            var result: Int32 = 0
            plaintext.writeWithUnsafeMutableBytes(minimumWritableBytes: Self.recordSize) { raw in
                result = SSL_read(ssl, raw.baseAddress, Int32(clamping: raw.count))
                return result > 0 ? Int(result) : 0
            }
            if result > 0 {
                context.fireChannelRead(wrapInboundOut(plaintext))
                continue
            }
            let error = SSL_get_error(ssl, result)
            send(context, flush: true)  // a session ticket, a key update's answer
            if wantsMore(error) { return }
            if error == SSL_ERROR_ZERO_RETURN {  // the client's close_notify
                finished = true
                context.close(promise: nil)
                return
            }
            return fail(context)
        }
    }

    private func wantsMore(_ error: Int32) -> Bool {
        error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE
    }

    /// Sends what OpenSSL has queued (its alert among it), then closes.
    private func fail(_ context: ChannelHandlerContext) {
        guard !finished else { return }
        finished = true
        ERR_clear_error()
        send(context, flush: true)
        context.close(promise: nil)
    }

    // MARK: Outbound: plaintext in, ciphertext down

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        if finished { promise?.fail(ChannelError.ioOnClosedChannel); return }
        guard established else { waiting.append((buffer, promise)); return }
        encrypt(context, buffer, promise)
    }

    func flush(context: ChannelHandlerContext) {
        if established { context.flush() } else { flushWaiting = true }
    }

    /// A close of the whole connection says close_notify first, when there is a session.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all, established, !finished, !shutDown {
            shutDown = true
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
            send(context, flush: true)
        }
        finished = finished || mode == .all
        context.close(mode: mode, promise: promise)
    }

    private func encrypt(_ context: ChannelHandlerContext, _ buffer: ByteBuffer, _ promise: EventLoopPromise<Void>?) {
        if buffer.readableBytes > 0 {
            ERR_clear_error()
            // A memory BIO grows as needed, so a write is whole or an error.
            let written = buffer.withUnsafeReadableBytes { SSL_write(ssl, $0.baseAddress, Int32(clamping: $0.count)) }
            guard written == buffer.readableBytes else {
                promise?.fail(TLSFailure("OpenSSL refused to encrypt a write: \(TLSContext.lastError())"))
                return fail(context)
            }
        }
        guard let ciphertext = drain(context) else { promise?.succeed(); return }
        context.write(wrapOutboundOut(ciphertext), promise: promise)
    }

    /// What OpenSSL has queued for the socket, written (and flushed when asked).
    private func send(_ context: ChannelHandlerContext, flush: Bool) {
        guard let ciphertext = drain(context) else { return }
        context.write(wrapOutboundOut(ciphertext), promise: nil)
        if flush { context.flush() }
    }

    private func drain(_ context: ChannelHandlerContext) -> ByteBuffer? {
        let pending = Int(BIO_ctrl_pending(outgoing))
        guard pending > 0 else { return nil }
        var buffer = context.channel.allocator.buffer(capacity: pending)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { raw in
            max(0, Int(BIO_read(outgoing, raw.baseAddress, Int32(clamping: pending))))
        }
        return buffer
    }
}

/// A connection's TLS failed in a way OpenSSL explains.
struct TLSFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

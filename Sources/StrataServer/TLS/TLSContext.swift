import CStrataTLS

/// The service's certificate and key, loaded once at start into one OpenSSL context that
/// every connection's `TLSServerHandler` is made from. OpenSSL's (Debian's libssl), not a
/// second TLS library compiled with the service. TLS 1.2 at least, no renegotiation.
///
/// A context, once configured, may make connections on any thread (OpenSSL locks its
/// session cache), so it is shared by every event loop.
final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Reads the PEM certificate chain and private key; a file that cannot be read, a key
    /// that does not match the certificate, is an error naming the setting.
    init(certificateFile: String, keyFile: String) throws {
        ERR_clear_error()
        guard let made = SSL_CTX_new(TLS_server_method()) else {
            throw ServerConfigError("server.tls_certificate", "OpenSSL made no context: \(Self.lastError())")
        }
        pointer = made
        guard strata_tls_configure(made) == 1 else {
            throw ServerConfigError("server.tls_certificate", "OpenSSL refused TLS 1.2 as the lowest version: \(Self.lastError())")
        }
        guard SSL_CTX_use_certificate_chain_file(made, certificateFile) == 1 else {
            throw ServerConfigError("server.tls_certificate", "\(certificateFile): not a PEM certificate chain OpenSSL can read (\(Self.lastError()))")
        }
        guard SSL_CTX_use_PrivateKey_file(made, keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw ServerConfigError("server.tls_key", "\(keyFile): not a PEM private key OpenSSL can read (\(Self.lastError()))")
        }
        guard SSL_CTX_check_private_key(made) == 1 else {
            throw ServerConfigError("server.tls_key", "\(keyFile) is not the key of \(certificateFile)")
        }
    }

    deinit { SSL_CTX_free(pointer) }

    /// OpenSSL's oldest queued error as text (and the queue emptied).
    static func lastError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "no reason given" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

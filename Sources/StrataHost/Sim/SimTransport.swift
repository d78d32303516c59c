import Foundation
import Logging
import Strata
import StrataHTTP
import StrataPostgres

/// The sim's sync transport, by the server's scheme: a sync service (`https://`, or
/// `http://` on loopback) with the token read from `[sync] token_file`, or PostgreSQL
/// directly (`postgresql://`).
enum SimTransport {
    static func isService(_ server: String) -> Bool { server.hasPrefix("http://") || server.hasPrefix("https://") }

    /// Refuses what cannot work before the document is touched.
    static func check(_ sync: SyncConfig) throws {
        if isService(sync.server) {
            _ = try HTTPTransport.checkedBase(sync.server)
            guard !sync.tokenFile.isEmpty else { throw SyncError(.misconfigured, "a sync service needs a token: --token-file FILE ([sync] token_file)") }
            guard FileManager.default.isReadableFile(atPath: sync.tokenFile) else {
                throw SyncError(.misconfigured, "cannot read the token file \(sync.tokenFile)")
            }
        } else {
            _ = try PostgresEndpoint(url: sync.server)
        }
    }

    static func make(_ sync: SyncConfig, logger: Logger) throws -> any SyncTransport {
        guard isService(sync.server) else {
            return try PostgresTransport(url: sync.server, document: sync.document, timeout: sync.requestTimeout, logger: logger)
        }
        let file = sync.tokenFile
        return try HTTPTransport(url: sync.server, document: sync.document, timeout: sync.requestTimeout, logger: logger) {
            guard let token = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw SyncError(.misconfigured, "cannot read the token file \(file)")
            }
            return token
        }
    }
}

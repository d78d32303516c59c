import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import StrataServer

/// `strata-server serve`: runs an instance until SIGTERM or SIGINT (a clean stop: the
/// requests in flight are answered, the feed and the pool closed).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the sync service.")

    @Option(help: "The service's TOML settings (strata-server.toml).")
    var config: String?

    @Option(help: "The PostgreSQL server (overrides [database] url), e.g. postgresql://strata@/strata?host=/run/postgresql.")
    var database: String?

    @Option(help: "HOST:PORT to listen on (overrides [server] listen; port 0: any free port).")
    var listen: String?

    @Option(name: .customLong("hmac-secret-file"), help: "A file holding the HS256 secret tokens are signed with (overrides [auth] hmac_secret_file).")
    var hmacSecretFile: String?

    @Option(name: .customLong("tls-certificate"), help: "A PEM certificate chain to serve HTTPS with (overrides [server] tls_certificate; needs --tls-key).")
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: "The PEM private key of that certificate (overrides [server] tls_key).")
    var tlsKey: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func run() async throws {
        var settings: ServerConfig
        do {
            settings = try loadConfig()
            if let database { settings.databaseURL = database }
            if let listen { try settings.setListen(listen, key: "--listen") }
            if let hmacSecretFile { settings.hmacSecretFile = hmacSecretFile }
            if let tlsCertificate { settings.tlsCertificate = tlsCertificate }
            if let tlsKey { settings.tlsKey = tlsKey }
            try settings.validate()
        } catch {
            printError("strata-server serve: \(error)")
            throw ExitCode(64)
        }
        var logger = Logger(label: "strata.server")
        guard let level = Logger.Level(rawValue: logLevel) else {
            printError("strata-server serve: --log-level must be trace, debug, info, notice, warning, error or critical")
            throw ExitCode(64)
        }
        logger.logLevel = level
        let service: SyncService
        do {
            service = try await SyncService(config: settings, logger: logger)
        } catch let error as ServerConfigError {
            printError("strata-server serve: \(error)")
            throw ExitCode(64)
        } catch {
            printError("strata-server serve: cannot start: \(error)")
            throw ExitCode.failure
        }
        defer { service.shutdown() }
        let host = settings.host
        let scheme = settings.tlsCertificate.isEmpty ? "http" : "https"
        let app = service.application { port in
            // One line a script can wait for.
            FileHandle.standardOutput.write(Data("strata-server: listening on \(scheme)://\(host):\(port)\n".utf8))
        }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    private func loadConfig() throws -> ServerConfig {
        guard let config else { return ServerConfig() }
        guard let text = try? String(contentsOfFile: config, encoding: .utf8) else {
            throw ServerConfigError("--config", "cannot read \(config)")
        }
        return try ServerConfig.parse(text, source: config)
    }
}

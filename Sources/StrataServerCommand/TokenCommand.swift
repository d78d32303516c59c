import ArgumentParser
import Foundation
import StrataServer

/// `strata-server token`: prints a signed token (trying it out, tests, scripts; a game's
/// own account service would sign them in production).
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "token", abstract: "Print a signed bearer token for a subject.")

    @Option(name: .customLong("hmac-secret-file"), help: "The HS256 secret's file (the service's --hmac-secret-file).")
    var hmacSecretFile: String

    @Option(help: "Whose token it is (the name members are granted roles by).")
    var subject: String

    @Option(help: "The audience (the service's [auth] audience).")
    var audience = "strata"

    @Option(parsing: .unconditional, help: "Seconds it is valid for.")
    var ttl = 3600

    @Option(name: .customLong("key-id"), help: "The key id (kid) to name, for a secret configured under [[auth.keys]].")
    var keyID: String?

    func run() throws {
        guard (1 ... 366 * 86_400).contains(ttl) else { throw ValidationError("--ttl must be between 1 s and a year") }
        guard !subject.isEmpty, subject.utf8.count <= 256 else { throw ValidationError("--subject must be 1 to 256 bytes") }
        do {
            let key = try ServerConfig.hmacKey(file: hmacSecretFile, id: keyID, key: "--hmac-secret-file")
            print(try TokenSigner.token(subject: subject, audience: audience, key: key, ttl: .seconds(ttl)))
        } catch {
            printError("strata-server token: \(error)")
            throw ExitCode(64)
        }
    }
}

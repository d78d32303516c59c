import Foundation
import TOMLKit

extension ServerConfig {
    /// Reads `text` (a TOML file's content; `source` names it in errors). Unknown keys and
    /// values of the wrong type or out of range are refused by name.
    public static func parse(_ text: String, source: String = "config") throws -> ServerConfig {
        let root: TOMLTable
        do {
            root = try TOMLTable(string: text)
        } catch {
            throw ServerConfigError("", "\(source) is not valid TOML: \(error)")
        }
        var c = ServerConfig()
        var top = Reader(root, "")
        var server = try top.table("server")
        try c.setListen(try server.string("listen", "\(c.host):\(c.port)"), key: "server.listen")
        c.tlsCertificate = try server.string("tls_certificate", c.tlsCertificate)
        c.tlsKey = try server.string("tls_key", c.tlsKey)
        c.requestTimeout = .seconds(try server.int("request_timeout_secs", 60, 10 ... 3600))
        c.idleTimeout = .seconds(try server.int("idle_timeout_secs", 75, 1 ... 3600))
        c.maxPullWait = .seconds(try server.int("max_pull_wait_secs", 30, 0 ... 3600))
        try server.done()

        var database = try top.table("database")
        c.databaseURL = try database.string("url", c.databaseURL)
        c.poolSize = try database.int("pool_size", c.poolSize, 1 ... 1000)
        c.databaseTimeout = .milliseconds(try database.int("timeout_ms", 10_000, 100 ... 600_000))
        c.startWait = .seconds(try database.int("start_wait_secs", 60, 0 ... 86_400))
        try database.done()

        var auth = try top.table("auth")
        c.audience = try auth.string("audience", c.audience)
        c.hmacSecretFile = try auth.string("hmac_secret_file", c.hmacSecretFile)
        c.leeway = .seconds(try auth.int("leeway_secs", 10, 0 ... 3600))
        c.membershipCache = .milliseconds(try auth.int("membership_cache_ms", 5000, 0 ... 600_000))
        for (index, var entry) in try auth.tables("keys").enumerated() {
            let id = try entry.string("id", "")
            let algorithm = try entry.string("algorithm", "")
            let isSecret = algorithm.hasPrefix("HS")
            let file = try entry.string(isSecret ? "secret_file" : "public_key_file", "")
            guard !id.isEmpty else { throw ServerConfigError("auth.keys[\(index)].id", "is required") }
            guard TokenKey.Algorithm(rawValue: algorithm) != nil else {
                throw ServerConfigError("auth.keys[\(index)].algorithm", "must be one of \(TokenKey.Algorithm.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(algorithm)\"")
            }
            guard !file.isEmpty else {
                throw ServerConfigError("auth.keys[\(index)].\(isSecret ? "secret_file" : "public_key_file")", "is required")
            }
            try entry.done()
            c.keys.append(KeyEntry(id: id, algorithm: algorithm, file: file))
        }
        try auth.done()

        var limits = try top.table("limits")
        c.maxBodyBytes = try limits.int("max_body_bytes", c.maxBodyBytes, 1024 ... 1 << 30)
        c.maxOperationsPerPush = try limits.int("max_operations_per_push", c.maxOperationsPerPush, 1 ... 1_000_000)
        c.maxPayloadBytes = try limits.int("max_payload_bytes", c.maxPayloadBytes, 1 ... 1 << 30)
        c.maxPullLimit = try limits.int("max_pull_limit", c.maxPullLimit, 1 ... 1_000_000)
        c.requestsPerSecond = Double(try limits.int("requests_per_second", 100, 1 ... 1_000_000))
        c.burst = Double(try limits.int("burst", 200, 1 ... 10_000_000))
        c.maxDocumentNameBytes = try limits.int("max_document_name_bytes", c.maxDocumentNameBytes, 1 ... 4096)
        try limits.done()
        try top.done()
        return c
    }

    /// `HOST:PORT` (`[::1]:PORT` for IPv6).
    public mutating func setListen(_ value: String, key: String) throws {
        guard let colon = value.lastIndex(of: ":"), let port = Int(value[value.index(after: colon)...]), (0 ... 65535).contains(port) else {
            throw ServerConfigError(key, "must be HOST:PORT, got \"\(value)\"")
        }
        var host = String(value[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ServerConfigError(key, "names no host: \"\(value)\"") }
        self.host = host
        self.port = port
    }

    /// Whether the settings can work together (after the command line's overrides).
    public func validate() throws {
        guard !databaseURL.isEmpty else { throw ServerConfigError("database.url", "is required (or --database)") }
        guard databaseURL.hasPrefix("postgresql://") || databaseURL.hasPrefix("postgres://") else {
            throw ServerConfigError("database.url", "must be a postgresql:// URL")
        }
        guard tlsCertificate.isEmpty == tlsKey.isEmpty else {
            throw ServerConfigError("server.tls_key", "tls_certificate and tls_key go together")
        }
        guard listensOnLoopback || !tlsCertificate.isEmpty else {
            throw ServerConfigError("server.listen", "plain HTTP only on a loopback address (\(host) is not): set tls_certificate and tls_key, since tokens must not cross a network in clear")
        }
        guard hmacSecretFile.isEmpty == false || !keys.isEmpty else {
            throw ServerConfigError("auth", "no key to check tokens with: set hmac_secret_file or [[auth.keys]] (or --hmac-secret-file)")
        }
        guard !audience.isEmpty else { throw ServerConfigError("auth.audience", "must not be empty") }
        guard requestTimeout > maxPullWait + .seconds(5) else {
            throw ServerConfigError("server.max_pull_wait_secs", "must be at least 5 s below request_timeout_secs")
        }
    }

    /// The keys tokens are checked with, read from their files.
    public func loadKeys() throws -> [TokenKey] {
        var made: [TokenKey] = []
        if !hmacSecretFile.isEmpty { made.append(try Self.hmacKey(file: hmacSecretFile, id: nil, key: "auth.hmac_secret_file")) }
        for (index, entry) in keys.enumerated() {
            let key = "auth.keys[\(index)]"
            guard let algorithm = TokenKey.Algorithm(rawValue: entry.algorithm) else { throw ServerConfigError(key, "unknown algorithm") }
            if entry.algorithm.hasPrefix("HS") {
                made.append(try Self.hmacKey(file: entry.file, id: entry.id, algorithm: algorithm, key: key + ".secret_file"))
            } else {
                guard let pem = try? String(contentsOfFile: entry.file, encoding: .utf8) else {
                    throw ServerConfigError(key + ".public_key_file", "cannot read \(entry.file)")
                }
                do {
                    made.append(try TokenKey(id: entry.id, algorithm: algorithm, pem: pem))
                } catch {
                    throw ServerConfigError(key + ".public_key_file", "\(entry.file): \(error)")
                }
            }
        }
        return made
    }

    /// An HMAC key from a file: its bytes, a trailing newline left out.
    public static func hmacKey(file: String, id: String?, algorithm: TokenKey.Algorithm = .hs256, key: String) throws -> TokenKey {
        guard var bytes = FileManager.default.contents(atPath: file).map({ [UInt8]($0) }) else {
            throw ServerConfigError(key, "cannot read \(file)")
        }
        while bytes.last == UInt8(ascii: "\n") || bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        do {
            return try TokenKey(id: id, algorithm: algorithm, secret: bytes)
        } catch {
            throw ServerConfigError(key, "\(file): \(error)")
        }
    }
}

/// One TOML table read key by key; what is left unread is an unknown key.
private struct Reader {
    let table: TOMLTable
    let path: String
    var read: Set<String> = []

    init(_ table: TOMLTable, _ path: String) {
        self.table = table
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    mutating func string(_ key: String, _ fallback: String) throws -> String {
        read.insert(key)
        guard let value = table[key] else { return fallback }
        guard let string = value.string else { throw ServerConfigError(name(key), "must be a string") }
        guard !string.utf8.contains(0) else { throw ServerConfigError(name(key), "holds a NUL character") }
        return string
    }

    mutating func int(_ key: String, _ fallback: Int, _ range: ClosedRange<Int>) throws -> Int {
        read.insert(key)
        guard let value = table[key] else { return fallback }
        guard let int = value.int else { throw ServerConfigError(name(key), "must be an integer") }
        guard range.contains(int) else { throw ServerConfigError(name(key), "must be between \(range.lowerBound) and \(range.upperBound), got \(int)") }
        return int
    }

    mutating func table(_ key: String) throws -> Reader {
        read.insert(key)
        guard let value = table[key] else { return Reader(TOMLTable(), name(key)) }
        guard let inner = value.table else { throw ServerConfigError(name(key), "must be a table") }
        return Reader(inner, name(key))
    }

    mutating func tables(_ key: String) throws -> [Reader] {
        read.insert(key)
        guard let value = table[key] else { return [] }
        guard let array = value.array else { throw ServerConfigError(name(key), "must be an array of tables ([[\(name(key))]])") }
        return try array.enumerated().map { index, element in
            guard let inner = element.table else { throw ServerConfigError("\(name(key))[\(index)]", "must be a table") }
            return Reader(inner, "\(name(key))[\(index)]")
        }
    }

    func done() throws {
        if let unknown = table.keys.sorted().first(where: { !read.contains($0) }) {
            throw ServerConfigError(name(unknown), "is not a setting this service knows")
        }
    }
}

import Foundation

/// Checks a bearer token (a JWT, RFC 7519, in compact JWS form) and says whose it is.
///
/// Refused: anything but three base64url parts; a header that does not read, names
/// `alg: none` or an algorithm this service does not know, carries `crit`, or names a key
/// (`kid`) not configured; an algorithm other than the key's own (so a public key is never
/// used as an HMAC secret); a signature that does not check; claims without `sub` or
/// `exp`; `exp` past or `nbf` ahead (beyond `leeway`); an `aud` that is not `audience`.
public struct TokenVerifier: Sendable {
    public var keys: [TokenKey]
    public var audience: String
    public var leeway: Duration

    public init(keys: [TokenKey], audience: String, leeway: Duration = .seconds(10)) {
        self.keys = keys
        self.audience = audience
        self.leeway = leeway
    }

    /// The longest token read (a header line of reasonable size).
    public static let maxLength = 8 * 1024

    /// The token's subject, or why it is refused.
    public func subject(of token: String, now: Date = Date()) -> Result<String, TokenRefusal> {
        signed(token).flatMap { $0.subject(at: now, leeway: leeway) }
    }

    /// What of a token does not change with time, once its form, signature, audience and
    /// subject checked: its subject, and the times it holds between.
    public struct Signed: Sendable, Equatable {
        public var subject: String
        public var expires: Double
        public var notBefore: Double?

        /// The subject, if `now` is within the token's times (give or take `leeway`).
        public func subject(at now: Date, leeway: Duration) -> Result<String, TokenRefusal> {
            let seconds = now.timeIntervalSince1970
            let slack = Double(leeway.components.seconds)
            guard expires.isFinite, seconds <= expires + slack else { return .failure(.expired) }
            if let notBefore, !(notBefore.isFinite && seconds + slack >= notBefore) { return .failure(.notYetValid) }
            return .success(subject)
        }
    }

    /// The token checked but for its times, or why it is refused.
    public func signed(_ token: String) -> Result<Signed, TokenRefusal> {
        guard token.utf8.count <= Self.maxLength else { return .failure(.malformed("longer than \(Self.maxLength) bytes")) }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return .failure(.malformed("not three parts")) }
        guard let headerBytes = Base64URL.decode(parts[0]), let claimsBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2])
        else { return .failure(.malformed("a part is not base64url")) }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            return .failure(.malformed("the header does not read"))
        }
        guard header.crit == nil else { return .failure(.malformed("critical header extensions are not supported")) }
        guard let algorithm = TokenKey.Algorithm(rawValue: header.alg) else {
            return .failure(.badSignature("algorithm \"\(header.alg)\" is not accepted"))
        }
        guard let key = keys.first(where: { $0.id == header.kid && (header.kid != nil || $0.algorithm == algorithm) }) else {
            return .failure(.badSignature(header.kid.map { "no key \"\($0)\"" } ?? "no key for \(algorithm.rawValue) without a key id"))
        }
        guard key.algorithm == algorithm else {
            return .failure(.badSignature("key \"\(key.id ?? "")\" is for \(key.algorithm.rawValue), the token says \(algorithm.rawValue)"))
        }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard key.verifies(signature, over: signingInput) else { return .failure(.badSignature("the signature does not check")) }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimsBytes)) else {
            return .failure(.malformed("the claims do not read (sub and exp are required)"))
        }
        guard claims.aud?.values.contains(audience) == true else { return .failure(.wrongAudience) }
        let subject = claims.sub.trimmingCharacters(in: .whitespaces)
        guard !subject.isEmpty, subject.utf8.count <= 256, subject == claims.sub else {
            return .failure(.malformed("the subject is empty, longer than 256 bytes or padded"))
        }
        return .success(Signed(subject: subject, expires: claims.exp, notBefore: claims.nbf))
    }

    struct Header: Decodable {
        var alg: String
        var kid: String?
        var crit: [String]?
    }

    struct Claims: Decodable {
        var sub: String
        var exp: Double
        var nbf: Double?
        var aud: Audience?
    }

    /// `aud`: one string or several.
    struct Audience: Decodable {
        var values: [String]

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                values = [one]
            } else {
                values = try container.decode([String].self)
            }
        }
    }
}

/// Why a token was refused (the service answers 401 with it).
public enum TokenRefusal: Error, Equatable, CustomStringConvertible {
    case missing
    case malformed(String)
    case badSignature(String)
    case expired
    case notYetValid
    case wrongAudience

    public var description: String {
        switch self {
        case .missing: "no bearer token"
        case .malformed(let why): "the token does not read: \(why)"
        case .badSignature(let why): "the token is not signed by a configured key: \(why)"
        case .expired: "the token has expired"
        case .notYetValid: "the token is not valid yet"
        case .wrongAudience: "the token is for another audience"
        }
    }
}

/// Makes tokens (`strata-server token`, tests, scripts).
public enum TokenSigner {
    /// A signed token for `subject`, valid from now for `ttl`.
    public static func token(subject: String, audience: String, key: TokenKey, ttl: Duration,
                             now: Date = Date(), notBefore: Date? = nil) throws -> String {
        var header: [String: String] = ["alg": key.algorithm.rawValue, "typ": "JWT"]
        if let id = key.id { header["kid"] = id }
        let issued = now.timeIntervalSince1970.rounded(.down)
        var claims: [String: any Sendable] = ["sub": subject, "aud": audience, "iat": Int64(issued),
                                              "exp": Int64(issued) + ttl.components.seconds]
        if let notBefore { claims["nbf"] = Int64(notBefore.timeIntervalSince1970.rounded(.down)) }
        let encodedHeader = Base64URL.encode(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]))
        let encodedClaims = Base64URL.encode(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let input = encodedHeader + "." + encodedClaims
        guard let signature = key.sign(Array(input.utf8)) else { throw TokenKeyError("this key cannot sign (a public key)") }
        return input + "." + Base64URL.encode(signature)
    }
}

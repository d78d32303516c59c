import CStrataCrypto
import Foundation

/// A key that signs or checks tokens: an HMAC secret (HS256, HS384, HS512), or an
/// Ed25519 (EdDSA) or ECDSA P-256/P-384 (ES256, ES384) key read from PEM, through the
/// system's OpenSSL. A key has ONE algorithm: a token that names another is refused, so
/// a public key can never be taken for an HMAC secret (the algorithm confusion).
public final class TokenKey: @unchecked Sendable {
    // @unchecked Sendable: `key` is never changed after init; OpenSSL's verify and sign
    // calls only read it (each call makes its own context).
    public enum Algorithm: String, Sendable, CaseIterable {
        case hs256 = "HS256", hs384 = "HS384", hs512 = "HS512"
        case eddsa = "EdDSA", es256 = "ES256", es384 = "ES384"

        var isHMAC: Bool { [.hs256, .hs384, .hs512].contains(self) }
    }

    /// The `kid` tokens name it by (nil: the key of tokens that name none).
    public let id: String?
    public let algorithm: Algorithm
    private let secret: [UInt8]
    private let key: OpaquePointer?

    /// A new HMAC secret as text: 64 hex digits (256 bits), so a file holding it reads back
    /// the same (a secret's file loses its trailing newlines).
    public static func randomSecret() -> [UInt8] {
        Array((0 ..< 32).map { _ in String(format: "%02x", UInt8.random(in: 0 ... 255)) }.joined().utf8)
    }

    /// An HMAC key. A secret shorter than the hash is refused (RFC 7518 §3.2).
    public init(id: String?, algorithm: Algorithm = .hs256, secret: [UInt8]) throws {
        guard algorithm.isHMAC else { throw TokenKeyError("\(algorithm.rawValue) takes a PEM key, not a secret") }
        let least = algorithm == .hs256 ? 32 : algorithm == .hs384 ? 48 : 64
        guard secret.count >= least else {
            throw TokenKeyError("an \(algorithm.rawValue) secret must be at least \(least) bytes; this one is \(secret.count)")
        }
        self.id = id
        self.algorithm = algorithm
        self.secret = secret
        key = nil
    }

    /// An EdDSA or ECDSA key from PEM: a public key (checks tokens) or a private key (also
    /// signs them). Its type and curve must be the algorithm's.
    public init(id: String?, algorithm: Algorithm, pem: String) throws {
        guard !algorithm.isHMAC else { throw TokenKeyError("\(algorithm.rawValue) takes a secret, not a PEM key") }
        let bytes = Array(pem.utf8)
        let read: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            if pem.contains("PRIVATE KEY") { return PEM_read_bio_PrivateKey(bio, nil, nil, nil) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let read else { throw TokenKeyError("not a PEM public or private key") }
        let type = EVP_PKEY_get_base_id(read)
        let bits = EVP_PKEY_get_bits(read)
        let fits = switch algorithm {
        case .eddsa: type == EVP_PKEY_ED25519
        case .es256: type == EVP_PKEY_EC && bits == 256
        case .es384: type == EVP_PKEY_EC && bits == 384
        default: false
        }
        guard fits else {
            EVP_PKEY_free(read)
            throw TokenKeyError("the PEM key is not a key for \(algorithm.rawValue)")
        }
        self.id = id
        self.algorithm = algorithm
        secret = []
        key = read
    }

    deinit { if let key { EVP_PKEY_free(key) } }

    /// Whether `signature` is this key's over `input`.
    func verifies(_ signature: [UInt8], over input: [UInt8]) -> Bool {
        switch algorithm {
        case .hs256, .hs384, .hs512:
            let expected = hmac(input)
            guard expected.count == signature.count, !expected.isEmpty else { return false }
            return CRYPTO_memcmp(expected, signature, expected.count) == 0
        case .eddsa:
            return digestVerify(nil, signature: signature, input: input)
        case .es256, .es384:
            let half = algorithm == .es256 ? 32 : 48
            guard signature.count == 2 * half, let der = Self.der(raw: signature, half: half) else { return false }
            return digestVerify(algorithm == .es256 ? EVP_sha256() : EVP_sha384(), signature: der, input: input)
        }
    }

    /// This key's signature over `input` (nil: a public key cannot sign).
    func sign(_ input: [UInt8]) -> [UInt8]? {
        switch algorithm {
        case .hs256, .hs384, .hs512: return hmac(input)
        case .eddsa: return digestSign(nil, input: input)
        case .es256, .es384:
            let half = algorithm == .es256 ? 32 : 48
            return digestSign(algorithm == .es256 ? EVP_sha256() : EVP_sha384(), input: input).flatMap { Self.raw(der: $0, half: half) }
        }
    }

    private func hmac(_ input: [UInt8]) -> [UInt8] {
        let digest = algorithm == .hs256 ? EVP_sha256() : algorithm == .hs384 ? EVP_sha384() : EVP_sha512()
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard HMAC(digest, secret, Int32(secret.count), input, input.count, &out, &length) != nil else { return [] }
        return Array(out.prefix(Int(length)))
    }

    private func digestVerify(_ digest: OpaquePointer?, signature: [UInt8], input: [UInt8]) -> Bool {
        guard let key, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, input, input.count) == 1
    }

    private func digestSign(_ digest: OpaquePointer?, input: [UInt8]) -> [UInt8]? {
        guard let key, let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest, nil, key) == 1 else { return nil }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, input, input.count) == 1 else { return nil }
        var out = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &out, &length, input, input.count) == 1 else { return nil }
        return Array(out.prefix(length))
    }

    /// A JWS ECDSA signature (r and s, `half` bytes each) as the DER OpenSSL checks.
    private static func der(raw: [UInt8], half: Int) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, Int32(half), nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + half }, Int32(half), nil) }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &out)
        guard length > 0, let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// DER from OpenSSL as a JWS signature: r and s, each left-padded to `half` bytes.
    private static func raw(der: [UInt8], half: Int) -> [UInt8]? {
        var cursor: UnsafePointer<UInt8>? = nil
        return der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            cursor = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            defer { ECDSA_SIG_free(signature) }
            var out = [UInt8](repeating: 0, count: 2 * half)
            guard BN_bn2binpad(ECDSA_SIG_get0_r(signature), &out, Int32(half)) == Int32(half) else { return nil }
            let wrote = out.withUnsafeMutableBufferPointer { BN_bn2binpad(ECDSA_SIG_get0_s(signature), $0.baseAddress.map { $0 + half }, Int32(half)) }
            return wrote == Int32(half) ? out : nil
        }
    }
}

public struct TokenKeyError: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) { self.description = description }
}

import Foundation
import Testing
@testable import StrataServer

/// Every token that is not right is refused, and nothing is stored.
@Suite(.serialized) struct TokenTests {
    @Test func tokensThatAreNotRightAreRefusedAndStoreNothing() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        let good = try service.token("alice")
        let parts = good.split(separator: ".").map(String.init)
        let otherKey = try TokenKey(id: nil, secret: TokenKey.randomSecret())
        let header = { (json: String) in Base64URL.encode(Array(json.utf8)) }
        let bad: [(String, String?)] = [
            ("expired", try service.token("alice", ttl: .seconds(60), now: Date(timeIntervalSinceNow: -3600))),
            ("not yet valid", try service.token("alice", notBefore: Date(timeIntervalSinceNow: 600))),
            ("another audience", try service.token("alice", audience: "someone-else")),
            ("another key", try TokenSigner.token(subject: "alice", audience: "strata", key: otherKey, ttl: .seconds(600))),
            ("alg none", header(#"{"alg":"none","typ":"JWT"}"#) + "." + parts[1] + "."),
            ("alg none, signature kept", header(#"{"alg":"none"}"#) + "." + parts[1] + "." + parts[2]),
            ("an unknown algorithm", header(#"{"alg":"HS1"}"#) + "." + parts[1] + "." + parts[2]),
            ("an unknown key id", header(#"{"alg":"HS256","kid":"nope"}"#) + "." + parts[1] + "." + parts[2]),
            ("a claim changed", parts[0] + "." + Base64URL.encode(Array(#"{"sub":"root","aud":"strata","exp":9999999999}"#.utf8)) + "." + parts[2]),
            ("truncated", String(good.dropLast(5))),
            ("two parts", parts[0] + "." + parts[1]),
            ("garbage", "garbage"),
            ("empty", ""),
            ("no header", nil),
        ]
        for (what, token) in bad {
            let answer = try await service.push(document, token: token ?? "", [operation()])
            let status = token == nil
                ? try await service.request("POST", "push", document: document, token: nil, body: Data("{}".utf8)).status
                : answer.status
            #expect(status == 401, "\(what): \(answer.text)")
        }
        #expect(try service.stored(document) == 0)
        #expect(try await service.push(document, token: good, [operation()]).status == 200, "the good one goes through")
    }

    /// A token checked once is not checked again, but its times are: it is refused once it
    /// expires (and before its `nbf`); a refused token is not kept; the store stays bounded.
    @Test func aTokenCheckedOnceStillExpires() throws {
        let key = try TokenKey(id: nil, secret: TokenKey.randomSecret())
        let verifier = TokenVerifier(keys: [key], audience: "strata", leeway: .seconds(0))
        let tokens = SignedTokens(capacity: 2)
        let now = Date()
        let token = try TokenSigner.token(subject: "alice", audience: "strata", key: key, ttl: .seconds(60), now: now)
        #expect(tokens.subject(of: token, by: verifier, now: now) == .success("alice"))
        #expect(tokens.count == 1)
        #expect(tokens.subject(of: token, by: verifier, now: now + 30) == .success("alice"))
        #expect(tokens.subject(of: token, by: verifier, now: now + 61) == .failure(.expired))
        #expect(tokens.subject(of: token, by: verifier, now: now - 3600) == .success("alice"), "no nbf: only exp bounds it")
        let later = try TokenSigner.token(subject: "bob", audience: "strata", key: key, ttl: .seconds(3600), now: now, notBefore: now + 600)
        #expect(tokens.subject(of: later, by: verifier, now: now) == .failure(.notYetValid))
        #expect(tokens.subject(of: later, by: verifier, now: now + 600) == .success("bob"))

        let other = try TokenKey(id: nil, secret: TokenKey.randomSecret())
        let forged = try TokenSigner.token(subject: "alice", audience: "strata", key: other, ttl: .seconds(60), now: now)
        #expect(tokens.subject(of: forged, by: verifier, now: now) != .success("alice"))
        #expect(tokens.count == 2, "the forged token is not kept")
        let third = try TokenSigner.token(subject: "carol", audience: "strata", key: key, ttl: .seconds(60), now: now)
        #expect(tokens.subject(of: third, by: verifier, now: now) == .success("carol"))
        #expect(tokens.count == 1, "full: emptied, then the new one kept")
    }

    /// A public key configured for EdDSA is never used as an HMAC secret: a token signed
    /// with HS256 under the public key's bytes names the key and is refused.
    @Test func publicKeysCheckTheirOwnAlgorithmOnly() throws {
        let folder = NSTemporaryDirectory() + "strata-keys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (name, algorithm) in [("ed", ["-algorithm", "ed25519"]), ("p256", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                                  ("p384", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])] {
            try TestPostgres.run("/usr/bin/openssl", ["genpkey"] + algorithm + ["-out", "\(folder)/\(name).pem"])
            try TestPostgres.run("/usr/bin/openssl", ["pkey", "-in", "\(folder)/\(name).pem", "-pubout", "-out", "\(folder)/\(name).pub.pem"])
        }
        func pem(_ name: String) throws -> String { try String(contentsOfFile: "\(folder)/\(name)", encoding: .utf8) }
        let cases: [(String, TokenKey.Algorithm)] = [("ed", .eddsa), ("p256", .es256), ("p384", .es384)]
        var publicKeys: [TokenKey] = []
        for (name, algorithm) in cases {
            let signer = try TokenKey(id: name, algorithm: algorithm, pem: try pem("\(name).pem"))
            let checker = try TokenKey(id: name, algorithm: algorithm, pem: try pem("\(name).pub.pem"))
            publicKeys.append(checker)
            let verifier = TokenVerifier(keys: [checker], audience: "strata")
            let token = try TokenSigner.token(subject: "alice", audience: "strata", key: signer, ttl: .seconds(60))
            #expect(verifier.subject(of: token) == .success("alice"), "\(algorithm.rawValue)")
            // The same key named for another algorithm: refused.
            #expect(throws: TokenKeyError.self) { try TokenKey(id: name, algorithm: algorithm == .eddsa ? .es256 : .eddsa, pem: try pem("\(name).pub.pem")) }
            // A public key cannot sign.
            #expect(throws: TokenKeyError.self) { try TokenSigner.token(subject: "x", audience: "strata", key: checker, ttl: .seconds(60)) }
        }
        // The confusion: HS256 over the token, keyed with the public key's PEM bytes.
        let verifier = TokenVerifier(keys: publicKeys, audience: "strata")
        let confused = try TokenKey(id: "ed", algorithm: .hs256, secret: Array(try pem("ed.pub.pem").utf8))
        let forged = try TokenSigner.token(subject: "root", audience: "strata", key: confused, ttl: .seconds(60))
        guard case .failure(.badSignature) = verifier.subject(of: forged) else {
            Issue.record("an HS256 token under an EdDSA key's id was not refused: \(verifier.subject(of: forged))")
            return
        }
    }
}

import Foundation
import StrataWire
import Testing
@testable import StrataServer

/// What is too large gets 413, what does not read 422, a subject past its rate 429 with
/// Retry-After; each changes nothing.
@Suite(.serialized) struct LimitTests {
    @Test func tooLargeAndMalformedAreRefusedWhole() async throws {
        let service = try await TestService { config in
            config.maxBodyBytes = 64 * 1024
            config.maxPayloadBytes = 1000
            config.maxOperationsPerPush = 50
        }
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        let token = try service.token("alice")

        let body = try await service.request("POST", "push", document: document, token: token, body: Data(repeating: 32, count: 200 * 1024))
        #expect(body.status == 413 && body.errorCode == "too_large", "\(body.text)")
        let payload = try await service.push(document, token: token, [operation(), operation(payload: 1001)])
        #expect(payload.status == 413, "\(payload.text)")
        let count = try await service.push(document, token: token, (1 ... 51).map { operation(seq: Int64($0)) })
        #expect(count.status == 413, "\(count.text)")
        // One bad operation (seq 0) refuses the batch whole.
        let malformed = try await service.push(document, token: token, [operation(seq: 1), operation(seq: 0)])
        #expect(malformed.status == 422 && malformed.errorCode == "malformed", "\(malformed.text)")
        let notJSON = try await service.request("POST", "push", document: document, token: token, body: Data("{\"operations\": [1]}".utf8))
        #expect(notJSON.status == 422)
        let badClock = try await service.request("POST", "pull", document: document, token: token,
                                                 body: Data(#"{"exclude":"\#(UUID())","clock":{"x":1},"after":0,"limit":1,"wait_ms":0}"#.utf8))
        #expect(badClock.status == 422, "\(badClock.text)")
        #expect(try service.stored(document) == 0)
    }

    /// A body that trickles in (a byte every 100 ms: never idle) is cut off at the request
    /// timeout with 408, and nothing of it is stored.
    @Test func aBodyThatTricklesInIsCutOffAtTheRequestTimeout() async throws {
        let service = try await TestService { config in
            config.maxPullWait = .seconds(1)
            config.requestTimeout = .seconds(7)
            config.idleTimeout = .seconds(60)
        }
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        let body = Array(try JSONEncoder().encode(SyncWire.PushRequest(operations: [operation()])))
        let connection = try RawConnection(port: service.port)
        connection.send(Array("""
            POST \(SyncWire.path(document: document, "push")) HTTP/1.1\r\nHost: localhost\r\n\
            Authorization: Bearer \(try service.token("alice"))\r\nContent-Length: \(body.count + 600)\r\n\r\n
            """.utf8) + body)
        var answer: [UInt8] = []
        for _ in 0 ..< 600 where !String(decoding: answer, as: UTF8.self).contains("\r\n\r\n") {
            connection.send([0x20])
            answer += connection.read(waiting: 100)
        }
        let text = String(decoding: answer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 408"), "\(text.prefix(300))")
        #expect(try service.stored(document) == 0)
    }

    @Test func aSubjectPastItsRateIsToldWhenToComeBack() async throws {
        let service = try await TestService { config in
            config.requestsPerSecond = 1
            config.burst = 3
        }
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        try service.grant(.writer, "bob", document)
        let alice = try service.token("alice")
        var statuses: [Int] = []
        var retryAfter: String?
        for _ in 0 ..< 6 {
            let answer = try await service.pull(document, token: alice)
            statuses.append(answer.status)
            if answer.status == 429 { retryAfter = answer.headers["retry-after"] }
        }
        #expect(statuses.prefix(3).allSatisfy { $0 == 200 }, "\(statuses)")
        #expect(statuses.contains(429), "\(statuses)")
        #expect(retryAfter.flatMap { Int($0) }.map { $0 >= 1 } == true)
        #expect(try await service.pull(document, token: try service.token("bob")).status == 200, "another subject has its own rate")
    }
}

import Foundation
import StrataWire
import Testing
@testable import StrataServer

/// A pull that finds nothing waits, and answers when something is pushed, through this
/// instance or another one on the same PostgreSQL (the change feed). The waits here are an
/// hour long: a pull that was not woken fails the test's time limit, it does not pass late.
@Suite(.serialized) struct LivePullTests {
    static let hour = 3_600_000

    @Test(.timeLimit(.minutes(1))) func aLivePullWakesOnAPushThroughAnotherInstance() async throws {
        let first = try await TestService { $0.maxPullWait = .seconds(3600); $0.requestTimeout = .seconds(3700) }
        let second = try await TestService(secret: first.secret) { $0.maxPullWait = .seconds(3600); $0.requestTimeout = .seconds(3700) }
        defer { Task { await first.stop(); await second.stop() } }
        let document = freshDocument()
        try first.grant(.writer, "alice", document)
        try first.grant(.reader, "bob", document)
        let bob = try first.token("bob")

        async let waiting = second.pull(document, token: bob, waitMilliseconds: Self.hour)
        try await Task.sleep(for: .milliseconds(300))   // let it start waiting (a push before would answer it as well)
        let pushed = operation()
        #expect(try await first.push(document, token: try first.token("alice"), [pushed]).status == 200)
        let answer = try await waiting
        #expect(answer.status == 200)
        let page = try JSONDecoder().decode(SyncWire.PullResponse.self, from: answer.body)
        #expect(page.operations.map(\.id) == [pushed.id])
    }

    /// No device state in an instance: a device that pushes through one instance, then
    /// another (a load balancer moved it), and retries a push through the second, loses and
    /// duplicates nothing; either instance hands out the same operations.
    @Test func aDeviceMovesBetweenInstancesAndLosesNothing() async throws {
        let first = try await TestService()
        let second = try await TestService(secret: first.secret)
        defer { Task { await first.stop(); await second.stop() } }
        let document = freshDocument()
        try first.grant(.writer, "alice", document)
        try first.grant(.reader, "bob", document)
        let alice = try first.token("alice")
        let node = UUID()
        let operations = (1 ... 6).map { operation(node: node, seq: Int64($0)) }
        #expect(try await first.push(document, token: alice, Array(operations[0 ..< 3])).status == 200)
        #expect(try await second.push(document, token: alice, Array(operations[2 ..< 6])).status == 200, "one sent again, as after a lost answer")
        let bob = try first.token("bob")
        for instance in [first, second] {
            let page = try JSONDecoder().decode(SyncWire.PullResponse.self, from: try await instance.pull(document, token: bob).body)
            #expect(page.operations.map(\.id) == operations.map(\.id))
        }
        #expect(try first.stored(document) == 6)
    }

    @Test(.timeLimit(.minutes(1))) func listeningWaitsForNewsAndLeavesTheDevicesOwnPushesOut() async throws {
        let service = try await TestService { $0.maxPullWait = .seconds(3600); $0.requestTimeout = .seconds(3700) }
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        try service.grant(.writer, "bob", document)
        let (alice, bob) = (try service.token("alice"), try service.token("bob"))
        let aliceNode = UUID()

        async let listening = service.pull(document, token: alice, limit: 0, waitMilliseconds: Self.hour, exclude: aliceNode)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await service.push(document, token: alice, [operation(node: aliceNode)]).status == 200, "her own: no news")
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await service.push(document, token: bob, [operation()]).status == 200)
        let answer = try JSONDecoder().decode(SyncWire.PullResponse.self, from: try await listening.body)
        #expect(answer.operations.isEmpty, "limit 0: news only")
        #expect(answer.hasMore)
        let page = try JSONDecoder().decode(SyncWire.PullResponse.self, from: try await service.pull(document, token: alice, exclude: aliceNode).body)
        #expect(page.operations.count == 1)
        #expect(answer.cursor == page.cursor, "the newest position: bob's push")
    }

    @Test func aPullWithNothingNewAnswersEmptyAtItsWait() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.reader, "rita", document)
        let answer = try await service.pull(document, token: try service.token("rita"), waitMilliseconds: 200)
        #expect(answer.status == 200)
        let page = try JSONDecoder().decode(SyncWire.PullResponse.self, from: answer.body)
        #expect(page.operations.isEmpty && !page.hasMore && page.cursor == 0)
    }

    @Test func thePoolIsAllThePostgreSQLConnectionsAnInstanceHolds() async throws {
        let service = try await TestService { $0.poolSize = 3; $0.maxPullWait = .seconds(3600); $0.requestTimeout = .seconds(3700) }
        let document = freshDocument()
        try service.grant(.reader, "rita", document)
        let token = try service.token("rita")
        // 40 live pulls waiting: still the pool and the feed.
        let pulls = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0 ..< 40 { group.addTask { try await service.pull(document, token: token, waitMilliseconds: Self.hour).status } }
                return try await group.reduce(0) { $0 + ($1 == 200 ? 1 : 0) }
            }
        }
        try await Task.sleep(for: .seconds(2))
        let during = try service.postgres.connections(of: service.service.instanceName)
        #expect(during >= 1 && during <= 3 + 1, "\(during) connections: the pool (3) and the feed at most")
        try service.grant(.writer, "wes", document)
        #expect(try await service.push(document, token: try service.token("wes"), [operation()]).status == 200)
        #expect(try await pulls.value == 40, "every waiting pull answered by one push")
        await service.stop()
    }
}

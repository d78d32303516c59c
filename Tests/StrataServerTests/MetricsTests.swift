import Foundation
import StrataWire
import Testing
@testable import StrataServer

/// `/metrics` counts what the instance did, under the names docs/sync.md gives.
@Suite struct MetricsTests {
    @Test func theMetricsPageCountsRequestsOperationsAndRefusedTokens() async throws {
        let service = try await TestService()
        defer { Task { await service.stop() } }
        let document = freshDocument()
        try service.grant(.writer, "alice", document)
        let token = try service.token("alice")
        #expect(try await service.push(document, token: token, [operation(seq: 1), operation(seq: 2)]).status == 200)
        #expect(try await service.pull(document, token: "garbage").status == 401)
        let page = try await service.request("GET", "/metrics", token: nil)
        #expect(page.status == 200)
        let lines = page.text.split(separator: "\n").map(String.init)
        for expected in ["strata_server_operations_stored_total 2", "strata_server_requests_total{route=\"push\",status=\"200\"} 1",
                         "strata_server_db_connections ", "strata_server_waiting_pulls ", "strata_server_change_feed_connected 1"] {
            #expect(lines.contains { $0.hasPrefix(expected) }, "no \(expected) in:\n\(page.text)")
        }
        #expect(lines.contains { $0.hasPrefix("strata_server_tokens_refused_total{reason=") && $0.hasSuffix(" 1") }, "\(page.text)")
    }
}

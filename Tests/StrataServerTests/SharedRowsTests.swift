import Foundation
import StrataWire
import Testing
@testable import StrataServer

/// The page a woken pull takes from its delivery's shared rows: after its own position, not
/// its own node, not what its clock has, at most its limit; none when the rows may not
/// hold all of it.
@Suite struct SharedRowsTests {
    let me = UUID(), other = UUID()

    func rows(_ full: Bool = false) -> SharedRows {
        SharedRows(rows: [(10, operation(node: other, seq: 1)), (11, operation(node: me, seq: 1)),
                          (12, operation(node: other, seq: 2)), (13, operation(node: other, seq: 3))], full: full)
    }

    func request(after: Int64, limit: Int) -> SyncWire.PullRequest {
        SyncWire.PullRequest(exclude: me, clock: [:], after: after, limit: limit)
    }

    @Test func aPageLeavesOutItsOwnNodeWhatItHasAndWhatCameBefore() throws {
        let page = try #require(rows().page(for: request(after: 10, limit: 10), clock: [other: 2], limit: 10))
        #expect(page.operations.map(\.seq) == [3])
        #expect(page.cursor == 13 && !page.hasMore)
    }

    @Test func aLimitCutsThePageAndSaysThereIsMore() throws {
        let page = try #require(rows().page(for: request(after: 0, limit: 2), clock: [:], limit: 2))
        #expect(page.operations.map(\.seq) == [1, 2])
        #expect(page.cursor == 12 && page.hasMore)
    }

    @Test func limitZeroSaysOnlyWhereTheNewestIs() throws {
        let page = try #require(rows().page(for: request(after: 11, limit: 0), clock: [:], limit: 0))
        #expect(page.operations.isEmpty && page.hasMore && page.cursor == 13)
        let none = try #require(rows().page(for: request(after: 13, limit: 0), clock: [:], limit: 0))
        #expect(!none.hasMore && none.cursor == 13)
    }

    @Test func rowsCutByTheirOwnLimitAnswerOnlyAPageTheyHoldWhole() {
        #expect(rows(true).page(for: request(after: 0, limit: 10), clock: [:], limit: 10) == nil, "the rest may lie past them")
        #expect(rows(true).page(for: request(after: 0, limit: 2), clock: [:], limit: 2) != nil)
    }
}

import Foundation
import NIOCore
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
        let (page, positions) = try #require(rows().page(for: request(after: 10, limit: 10), clock: [other: 2], limit: 10))
        #expect(page.operations.map(\.seq) == [3] && positions == [13])
        #expect(page.cursor == 13 && !page.hasMore)
    }

    @Test func aLimitCutsThePageAndSaysThereIsMore() throws {
        let (page, positions) = try #require(rows().page(for: request(after: 0, limit: 2), clock: [:], limit: 2))
        #expect(page.operations.map(\.seq) == [1, 2] && positions == [10, 12])
        #expect(page.cursor == 12 && page.hasMore)
    }

    @Test func limitZeroSaysOnlyWhereTheNewestIs() throws {
        let (page, _) = try #require(rows().page(for: request(after: 11, limit: 0), clock: [:], limit: 0))
        #expect(page.operations.isEmpty && page.hasMore && page.cursor == 13)
        let (none, _) = try #require(rows().page(for: request(after: 13, limit: 0), clock: [:], limit: 0))
        #expect(!none.hasMore && none.cursor == 13)
    }

    @Test func rowsCutByTheirOwnLimitAnswerOnlyAPageTheyHoldWhole() {
        #expect(rows(true).page(for: request(after: 0, limit: 10), clock: [:], limit: 10) == nil, "the rest may lie past them")
        #expect(rows(true).page(for: request(after: 0, limit: 2), clock: [:], limit: 2) != nil)
    }

    /// The pulls of one delivery that take the same page share one encoding; another page
    /// is encoded on its own, and each reads back as its page.
    @Test func pullsTakingTheSamePageShareItsEncoding() throws {
        let delivery = Delivery(document: "d", after: 0, generation: 1)
        let rows = rows()
        let (page, positions) = try #require(rows.page(for: request(after: 0, limit: 10), clock: [:], limit: 10))
        let (again, same) = try #require(rows.page(for: request(after: 0, limit: 10), clock: [:], limit: 10))
        let (later, taken) = try #require(rows.page(for: request(after: 10, limit: 10), clock: [:], limit: 10))
        let first = try delivery.encoded(page, taking: positions)
        let second = try delivery.encoded(again, taking: same)
        let third = try delivery.encoded(later, taking: taken)
        first.withUnsafeReadableBytes { a in second.withUnsafeReadableBytes { b in #expect(a.baseAddress == b.baseAddress, "encoded again") } }
        for (bytes, expected) in [(first, page), (third, later)] {
            let read = try JSONDecoder().decode(SyncWire.PullResponse.self, from: Data(bytes.readableBytesView))
            #expect(read.operations.map(\.id) == expected.operations.map(\.id) && read.cursor == expected.cursor && read.hasMore == expected.hasMore)
        }
        #expect(positions == [10, 12, 13] && taken == [12, 13])
    }
}

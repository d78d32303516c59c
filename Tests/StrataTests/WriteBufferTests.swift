import Foundation
import Testing
@testable import Strata

@Suite struct WriteBufferTests {
    func write(_ x: Float) -> ComponentWrite {
        ComponentWrite(entity: .random(in: 1 ... .max), typeIndex: 0, typeName: Position.typeName, value: Position(x: x, y: 0))
    }

    @Test func aCommittedBatchComesBackEmptyForTheNextFlush() {
        let buffer = WriteBuffer()
        var batch = WriteBatch()
        let first = batch
        batch.writes = [write(1), write(2), write(3)]
        batch.reasons = [.explicitSave]
        buffer.submit(&batch)
        #expect(batch !== first && batch.isEmpty, "the tick thread gets an empty batch in exchange")

        guard case .batch(let taken) = buffer.take(for: nil) else {
            Issue.record("the submitted batch should be waiting")
            return
        }
        #expect(taken === first)
        buffer.didCommit(taken)
        #expect(first.isEmpty && first.reasons.isEmpty && first.sequence == 0)
        #expect(first.writes.capacity >= 3, "emptied with its capacity kept")

        var next = WriteBatch()
        next.writes = [write(4)]
        buffer.submit(&next)
        #expect(next === first, "the committed batch is the next one to fill")
    }

    @Test func aSubmissionWhileOneWaitsQueuesAndTheWriterMergesItAndKeepsItsStorage() {
        let buffer = WriteBuffer()
        var a = WriteBatch()
        a.writes = [write(1)]
        let older = a
        buffer.submit(&a)
        var b = a
        let newer = b
        b.writes = [write(2)]
        let result = buffer.submit(&b)
        #expect(result.merged)
        #expect(b !== newer && b.isEmpty, "the tick thread gets an empty batch at once")
        #expect(newer.writes.count == 1, "queued as it was: not merged on the tick thread")
        guard case .batch(let taken) = buffer.take(for: nil) else {
            Issue.record("the merged batch should be waiting")
            return
        }
        #expect(taken === older && taken.writes.count == 2 && taken.sequence == 2)
        #expect(newer.isEmpty, "merged into the taken batch by the writer, and emptied")
        #expect(buffer.flushCounts.flushes == 2 && buffer.flushCounts.merged == 1)
        var c = WriteBatch()
        c.writes = [write(3)]
        buffer.submit(&c)
        #expect(c === newer, "the merged batch's storage is reused")
    }

    @Test func pastTheQueueASubmissionMergesIntoTheNewestAndNothingIsLost() {
        let buffer = WriteBuffer()
        let submitted = 2 + WriteBuffer.queuedBatches
        for entity in 1 ... submitted {
            var batch = WriteBatch()
            batch.writes = [write(Float(entity))]
            buffer.submit(&batch)
        }
        guard case .batch(let taken) = buffer.take(for: nil) else {
            Issue.record("the batches should be waiting")
            return
        }
        #expect(taken.writes.compactMap { ($0.value as? Position)?.x }.sorted() == (1 ... submitted).map { Float($0) }, "every write, once")
        #expect(taken.sequence == UInt64(submitted))
        #expect(buffer.flushCounts.merged == submitted - 1)
        if case .batch = buffer.take(for: .zero) { Issue.record("nothing should be left waiting") }
    }

    @Test func theWriterTakesAMergedBatchCoalesced() {
        let buffer = WriteBuffer()
        var a = WriteBatch()
        a.writes = [ComponentWrite(entity: 1, typeIndex: 0, typeName: Position.typeName, value: Position(x: 1, y: 0)),
                    ComponentWrite(entity: 2, typeIndex: 0, typeName: Position.typeName, value: Position(x: 1, y: 0))]
        buffer.submit(&a)
        var b = WriteBatch()
        b.writes = [ComponentWrite(entity: 1, typeIndex: 0, typeName: Position.typeName, value: Position(x: 2, y: 0))]
        #expect(buffer.submit(&b).merged)
        guard case .batch(let taken) = buffer.take(for: nil) else {
            Issue.record("the merged batch should be waiting")
            return
        }
        #expect(taken.mergedWrites.isEmpty && taken.writes.map(\.entity) == [1, 2])
        #expect((taken.writes[0].value as? Position)?.x == 2, "one write per key, the newest value")
    }

    @Test func flushCountsReportOnlyTheReasonsSeen() {
        var counts = FlushCounts()
        counts.record([.criticalDelay, .networkOperations], merged: false)
        counts.record([.networkOperations], merged: true)
        #expect(counts.reasons == [.criticalDelay: 1, .networkOperations: 2])
        #expect(counts.flushes == 2 && counts.merged == 1)
    }

    @Test func theVectorClockGoesWithEveryFlushThatCheckpointsWhateverItsTrigger() {
        for reason in FlushReason.allCases {
            let expected = reason.urgency == .nowThenCheckpoint
            var set = FlushReasonSet()
            set.insert(reason)
            #expect(!set.isDisjoint(with: .withVectorClock) == expected, "\(reason)")
        }
    }

    @Test func reasonSetsIterateInDeclarationOrderByBit() {
        for (index, reason) in FlushReason.byBit.enumerated() {
            #expect(reason.bit == 1 << index)
        }
        let set: FlushReasonSet = [.shutdown, .criticalDelay, .lowMemory]
        #expect(Array(set) == [.criticalDelay, .lowMemory, .shutdown])
        #expect(Array(FlushReasonSet()).isEmpty)
    }
}

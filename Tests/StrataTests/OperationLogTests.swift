import Foundation
import GRDB
import Testing
@testable import Strata

/// The operation log and the vector clock: critical, appended in order, rebuilt at open.
@Suite struct OperationLogTests {
    func peerOperation(_ node: NodeID, _ seq: Int64, at ms: Int64 = 1_000) -> LoggedOperation {
        LoggedOperation(node: node, seq: seq, timestamp: HybridTimestamp(milliseconds: ms), kind: "peer.edit", payload: [UInt8(seq)])
    }

    /// (node, seq) of every logged row, in key order, and the persisted clock.
    func stored(_ fixture: EngineFixture) throws -> (log: [String], clock: [String: Int64]) {
        try fixture.reader().read { db in
            let log = try Row.fetchAll(db, sql: "SELECT node, seq FROM operation_log ORDER BY node, seq").map { row in
                "\((row["node"] as Data).withUnsafeBytes { NodeID(bytes: $0)! }):\(row["seq"] as Int64)"
            }
            let clock = try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT node, seq FROM vector_clock").map { row in
                ("\((row["node"] as Data).withUnsafeBytes { NodeID(bytes: $0)! })", row["seq"] as Int64)
            })
            return (log, clock)
        }
    }

    @Test func localOperationsAreNumberedInOrderUnderAStableNodeIDAcrossRestarts() throws {
        var fixture = EngineFixture()
        fixture.options.wallClock = { 5_000 }   // a wall clock that stands still: the hybrid clock still moves
        let engine = try fixture.open()
        let node = engine.nodeID
        let ops = (0 ..< 3).map { engine.appendOperation(kind: "shape.create", payload: [UInt8($0)]) }
        #expect(ops.map(\.seq) == [1, 2, 3])
        #expect(ops.map(\.node) == [node, node, node])
        #expect(ops[0].timestamp < ops[1].timestamp && ops[1].timestamp < ops[2].timestamp)
        #expect(ops[0].timestamp.milliseconds == 5_000)
        #expect(Set(ops.map(\.id)).count == 3)
        #expect(engine.vectorClock == [node: 3])
        try engine.shutdown()

        let next = try fixture.open()
        #expect(next.nodeID == node)
        #expect(next.vectorClock == [node: 3])
        #expect(next.recovery.operations.operations == 3)
        #expect(next.recovery.operations.vectorClockRepairs.isEmpty, "a clean stop leaves the persisted clock equal to the log's")
        let fourth = next.appendOperation(kind: "shape.move", payload: [])
        #expect(fourth.seq == 4)
        #expect(fourth.timestamp > ops[2].timestamp, "the hybrid clock resumes after the last logged timestamp")
        try next.shutdown()
        #expect(try stored(fixture).clock == ["\(node)": 4])
    }

    @Test func peersOperationsAreDeduplicatedAndTheirGapsKept() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let peer = NodeID()
        let receipts = [1, 3, 3, 2, 5].map { engine.receiveOperation(peerOperation(peer, $0)) }
        #expect(receipts == [.accepted, .acceptedAfterGap, .duplicate, .accepted, .acceptedAfterGap])
        #expect(engine.vectorClock[peer] == 3)
        #expect(engine.operationGaps == [peer: [4 ... 4]])
        #expect(engine.receiveOperation(peerOperation(peer, 1)) == .duplicate, "committed or not, logged is logged")
        try engine.shutdown()
        #expect(try stored(fixture).log == [1, 2, 3, 5].map { "\(peer):\($0)" })

        let next = try fixture.open()
        #expect(next.vectorClock[peer] == 3)
        #expect(next.operationGaps == [peer: [4 ... 4]])
        #expect(next.recovery.operations.gaps == 1)
        #expect(next.receiveOperation(peerOperation(peer, 5)) == .duplicate)
        #expect(next.receiveOperation(peerOperation(peer, 4)) == .accepted)
        #expect(next.vectorClock[peer] == 5)
        #expect(next.operationGaps.isEmpty)
        try next.shutdown()
    }

    @Test func operationsAreCommittedFullByTheCriticalDelayInOrderAndSurviveACrash() throws {
        let fixture = EngineFixture()
        var engine: Engine? = try fixture.open()
        let node = engine!.nodeID
        engine!.appendOperation(kind: "a", payload: [1])
        engine!.appendOperation(kind: "b", payload: [2])
        let delay = fixture.config.persistence.criticalFlushDelay
        fixture.clock.advance(by: delay - engine!.flushLookahead - .milliseconds(1))
        engine!.endTick()
        engine!.waitForWriter()
        #expect(try stored(fixture).log.isEmpty, "not before the deadline")

        fixture.clock.advance(by: .milliseconds(1))
        engine!.endTick()
        engine!.waitForWriter()
        #expect(try stored(fixture).log == ["\(node):1", "\(node):2"])
        #expect(engine!.metrics.fullCommitCount == 1)
        #expect(engine!.metrics.operationsLogged == 2)

        engine = nil   // released without shutdown(): the session ends as a crash would
        let next = try fixture.open()
        #expect(next.recovery.crashed)
        #expect(next.vectorClock[node] == 2, "rebuilt from the log")
        #expect(next.appendOperation(kind: "c", payload: []).seq == 3)
        try next.shutdown()
    }

    /// The clock goes with the first critical flush after `vector_clock_every_operations`
    /// operations, and what it claims is always in the log already.
    @Test func theVectorClockRidesTheFlushAfterNOperationsAndNeverClaimsAnUnloggedOne() throws {
        var fixture = EngineFixture()
        fixture.config.persistence.vectorClockEveryOperations = 5
        fixture.config.persistence.vectorClockInterval = .seconds(3600)
        let engine = try fixture.open()
        let node = engine.nodeID
        var clockWrites: [Int64] = []
        for i in 1 ... 12 {
            engine.appendOperation(kind: "op", payload: [UInt8(i)])
            fixture.clock.advance(by: .milliseconds(400))
            engine.endTick()
            engine.waitForWriter()
            let (log, clock) = try stored(fixture)
            if let claimed = clock["\(node)"] {
                #expect(Int64(log.count) >= claimed, "the clock claims \(claimed) with \(log.count) logged")
                if clockWrites.last != claimed { clockWrites.append(claimed) }
            }
        }
        #expect(clockWrites.count == 2, "\(clockWrites)")
        #expect(clockWrites.first.map { $0 >= 5 } == true, "not before five operations: \(clockWrites)")
        #expect(zip(clockWrites, clockWrites.dropFirst()).allSatisfy { $1 - $0 >= 5 }, "\(clockWrites)")
        try engine.shutdown()
        #expect(try stored(fixture).clock == ["\(node)": 12], "and at shutdown")
    }

    /// Operations and acknowledgements set the tracker's `criticalExtras`, so a critical
    /// drain after one that had none takes them; the clock rows they moved wait for a
    /// batch that asks for the clock, whether or not anything else is queued then.
    @Test func operationsAndAcknowledgementsAfterADrainWithoutThemAreInTheNext() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let node = engine.nodeID, peer = NodeID()
        engine.world.drain(.critical, into: WriteBatch())
        #expect(!engine.world.tracker.criticalExtras)

        engine.appendOperation(kind: "op", payload: [1])
        let operations = WriteBatch()
        engine.world.drain(.critical, into: operations)
        #expect(operations.operations.map(\.seq) == [1] && operations.durability == .full)
        #expect(operations.vectorClockRows.isEmpty, "a batch that does not ask for the clock leaves it")

        engine.recordAcknowledgement(from: peer, clock: [node: 1])
        let acknowledgements = WriteBatch()
        engine.world.drain(.critical, into: acknowledgements)
        #expect(acknowledgements.peerAcks == [PeerAck(peer: peer, node: node, seq: 1)])
        #expect(!engine.world.tracker.criticalExtras)

        let clock = WriteBatch()
        engine.world.drain(.critical, into: clock, withClock: true)
        #expect(clock.vectorClockRows == [node: 1], "left by the drains before, taken with nothing else queued")
        // The drains above went nowhere: log the operation again for a clean stop.
        engine.world.operationLog.requeue(operations.operations[0])
        engine.world.tracker.noteCriticalWork(clock: engine.world.clock)
        try engine.shutdown()
        #expect(try stored(fixture).log == ["\(node):1"])
    }

    @Test func aClockLeftBehindIsRebuiltFromTheLogRepairedAndReported() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let node = engine.nodeID
        for _ in 0 ..< 3 { engine.appendOperation(kind: "op", payload: []) }
        try engine.shutdown()
        let stray = NodeID()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: "UPDATE vector_clock SET seq = 1")   // as a crash between the log and the clock would leave it
            try db.execute(sql: "INSERT INTO vector_clock (node, seq) VALUES (?, 7)", arguments: [stray.withBytes { Data($0) }])
        }
        try queue.close()

        let next = try fixture.open()
        #expect(next.vectorClock[node] == 3)
        #expect(next.recovery.operations.vectorClockRepairs.count == 2)
        #expect(next.recovery.operations.vectorClockRepairs.contains("node \(node): persisted 1, rebuilt from the log 3"))
        #expect(next.recovery.description.contains("vector clock repaired"))
        next.flushNow()
        #expect(try stored(fixture).clock == ["\(node)": 3, "\(stray)": 0], "written again before anything else happens")
        try next.shutdown()
        let again = try fixture.open()
        #expect(again.recovery.operations.vectorClockRepairs.isEmpty)
        try again.shutdown()
    }

    /// A big document's own sequences are counted from the table's count and ends, not row
    /// by row; the open must find the same clock either way. Each shape of the log below is
    /// opened, and what it found is compared with the walk's rule (the prefix from the floor).
    @Test(arguments: [
        (rows: [1, 2, 3, 4, 5], floor: 0, unbroken: true, through: 5),
        (rows: [3, 4, 5], floor: 2, unbroken: true, through: 5),   // retention dropped 1 and 2
        (rows: [2, 3, 4], floor: 3, unbroken: true, through: 4),   // a tombstone at or below the floor
        (rows: [1, 2], floor: 5, unbroken: true, through: 5),       // all at or below the floor
        (rows: [1, 2, 4, 5], floor: 0, unbroken: false, through: 2), // a hole: walked
        (rows: [4, 5], floor: 2, unbroken: false, through: 2),      // starting above the floor: walked
    ] as [(rows: [Int64], floor: Int64, unbroken: Bool, through: Int64)])
    func anUnbrokenRunOfOwnSequencesIsCountedWithoutAWalk(_ shape: (rows: [Int64], floor: Int64, unbroken: Bool, through: Int64)) throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let node = engine.nodeID
        for _ in 0 ..< 5 { engine.appendOperation(kind: "op", payload: []) }
        try engine.shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: "DELETE FROM local_operations WHERE seq NOT IN (\(shape.rows.map(String.init).joined(separator: ",")))")
            if shape.floor > 0 {
                try db.execute(sql: "INSERT INTO operation_floor (node, seq) VALUES (?, ?)", arguments: [node.withBytes { Data($0) }, shape.floor])
            }
            let run = try Store.unbrokenOwnRun(floor: shape.floor, db)
            #expect((run != nil) == shape.unbroken)
            if let run { #expect(run.count == shape.rows.count && run.through == shape.through) }
        }
        try queue.close()
        let next = try fixture.open()
        // Above a hole the next number skips what is missing (nothing parked): the prefix is
        // the highest used, as the walk's rule makes it.
        #expect(next.vectorClock[node] == (shape.unbroken ? shape.through : max(shape.rows.max()!, shape.floor)))
        #expect(next.recovery.operations.operations == shape.rows.count)
        #expect(next.appendOperation(kind: "op", payload: []).seq == max(shape.rows.max()!, shape.floor) + 1)
        try next.shutdown()
    }

    /// A damaged timestamp in this replica's log (the top of the range, in its newest or its
    /// oldest operation) is passed over when the clock resumes: the next edit is stamped
    /// after the last plausible one, and nothing traps counting on from the damaged one.
    @Test(arguments: ["max(seq)", "min(seq)"])
    func aTimestampFromTheFarFutureDoesNotStopTheClock(_ row: String) throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let ops = (0 ..< 3).map { _ in engine.appendOperation(kind: "op", payload: []) }
        try engine.shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in
            try db.execute(sql: "UPDATE local_operations SET timestamp = ? WHERE seq = (SELECT \(row) FROM local_operations)", arguments: [Int64.max])
        }
        try queue.close()
        let next = try fixture.open()
        let fourth = next.appendOperation(kind: "op", payload: [])
        #expect(fourth.seq == 4)
        #expect(fourth.timestamp.rawValue <= OperationLog.latestPlausibleTimestamp)
        let plausible = row == "max(seq)" ? ops[1] : ops[2]
        #expect(fourth.timestamp > plausible.timestamp, "after the newest plausible stamp")
        try next.shutdown()
    }

    @Test func theHybridClockMovesPastEverythingItHasSeen() {
        var clock = HybridLogicalClock()
        let first = clock.next(wallMilliseconds: 1_000)
        #expect(first == HybridTimestamp(milliseconds: 1_000))
        #expect(clock.next(wallMilliseconds: 1_000) == HybridTimestamp(milliseconds: 1_000, counter: 1))
        #expect(clock.next(wallMilliseconds: 900) == HybridTimestamp(milliseconds: 1_000, counter: 2), "a wall clock that steps back")
        clock.observe(HybridTimestamp(milliseconds: 5_000, counter: 3))
        #expect(clock.next(wallMilliseconds: 1_001) == HybridTimestamp(milliseconds: 5_000, counter: 4), "after a peer ahead of us")
        #expect(clock.next(wallMilliseconds: 6_000) == HybridTimestamp(milliseconds: 6_000))

        let a = NodeID(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)
        let b = NodeID(UUID(uuidString: "00000000-0000-0000-0000-000000000002")!)
        let t = HybridTimestamp(milliseconds: 7)
        let x = LoggedOperation(node: a, seq: 9, timestamp: t, kind: "k", payload: [])
        let y = LoggedOperation(node: b, seq: 1, timestamp: t, kind: "k", payload: [])
        #expect(x.causallyPrecedes(y) && !y.causallyPrecedes(x), "equal timestamps: the node id decides")
    }

    /// Anti-entropy: for any peer clock, the pages together hold exactly the logged
    /// operations above it, each once, in (node, sequence) order.
    @Test func aPeerIsSentExactlyWhatItLacksPageByPage() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let me = engine.nodeID, peer = NodeID(), other = NodeID()
        for _ in 0 ..< 7 { engine.appendOperation(kind: "local", payload: []) }
        for seq: Int64 in [1, 2, 3, 5, 6] { engine.receiveOperation(peerOperation(peer, seq)) }
        for seq: Int64 in 1 ... 4 { engine.receiveOperation(peerOperation(other, seq)) }
        engine.flushNow()
        let reader = try OperationLogReader(path: fixture.directory.databasePath)
        let all: [(NodeID, Int64)] = [(me, 7), (peer, 6), (other, 4)].flatMap { node, highest in
            (1 ... highest).filter { node != peer || $0 != 4 }.map { (node, $0) }
        }
        for clock: [NodeID: Int64] in [[:], [me: 3], [me: 7, peer: 2], [me: 7, peer: 6, other: 4], [peer: 5, NodeID(): 9]] {
            for limit in [1, 3, 100] {
                var got: [LoggedOperation] = []
                var page = try reader.missing(for: clock, limit: limit)
                got += page.operations
                while let next = page.next {
                    page = try reader.missing(for: clock, from: next, limit: limit)
                    #expect(page.operations.count <= limit)
                    got += page.operations
                }
                let expected = all.filter { $0.1 > (clock[$0.0] ?? 0) }
                    .sorted { a, b in a.0 == b.0 ? a.1 < b.1 : a.0.withBytes { x in b.0.withBytes { y in x.lexicographicallyPrecedes(y) } } }
                #expect(got.map { "\($0.node):\($0.seq)" } == expected.map { "\($0.0):\($0.1)" }, "clock \(clock), limit \(limit)")
            }
        }
        #expect(try reader.operations(of: peer, after: 3).map(\.seq) == [5, 6])
        #expect(try reader.operations(of: me, limit: 2).map(\.kind) == ["local", "local"])

        let summary = try reader.summary()
        #expect(summary[peer] == OperationLogReader.NodeSummary(count: 5, highest: 6, vectorClock: 3, gaps: [4 ... 4]))
        #expect(summary[me]?.gaps == [])
        #expect(try reader.nodeID() == me)
        try engine.shutdown()
    }

    /// Retention drops what every known peer acknowledged, never more than this replica
    /// holds contiguously, and the clock rebuilt at open still counts what it dropped.
    @Test func retentionDropsOnlyWhatEveryKnownPeerAcknowledged() throws {
        var fixture = EngineFixture()
        fixture.config.operationLog.retentionMinAge = .zero
        let engine = try fixture.open()
        let me = engine.nodeID, a = NodeID(), b = NodeID()
        for _ in 0 ..< 10 { engine.appendOperation(kind: "op", payload: []) }
        engine.flushNow()   // an explicit save writes the vector clock too
        func remaining() throws -> [Int64] { try stored(fixture).log.map { Int64($0.split(separator: ":").last!)! } }

        engine.recordAcknowledgement(from: a, clock: [me: 6])
        engine.flushNow()
        #expect(try remaining() == Array(7 ... 10), "the only known peer has 1…6")
        engine.recordAcknowledgement(from: b, clock: [me: 4])
        engine.flushNow()
        #expect(try remaining() == Array(7 ... 10), "a second peer with less drops nothing more")
        engine.recordAcknowledgement(from: b, clock: [me: 9])
        engine.recordAcknowledgement(from: a, clock: [me: 8])
        engine.recordAcknowledgement(from: a, clock: [me: 5])   // acknowledgements only grow
        engine.flushNow()
        #expect(try remaining() == Array(9 ... 10), "1…8: acknowledged by both")
        engine.recordAcknowledgement(from: a, clock: [me: 50])
        engine.recordAcknowledgement(from: b, clock: [me: 50])
        engine.flushNow()
        #expect(try remaining() == [], "never past what this replica holds (10)")
        #expect(engine.metrics.operationsDropped == 10)
        engine.appendOperation(kind: "after", payload: [])
        try engine.shutdown()

        let next = try fixture.open()
        #expect(next.vectorClock[me] == 11, "the dropped ones still count")
        #expect(next.recovery.operations.vectorClockRepairs.isEmpty)
        #expect(next.appendOperation(kind: "x", payload: []).seq == 12)
        try next.shutdown()
        let reader = try OperationLogReader(path: fixture.directory.databasePath)
        let page = try reader.missing(for: [me: 3])
        #expect(page.operations.map(\.seq) == [11, 12])
        #expect(page.unavailable == [me: 4 ... 10], "a peer that far behind is told what is gone")
        #expect(try reader.summary()[me]?.gaps == [])
        #expect(try reader.summary()[me]?.dropped == 10)
    }

    @Test(arguments: [OperationLogConfig.Retention.keep, .acknowledged])
    func nothingIsDroppedUnderKeepOrBeforeTheMinimumAge(retention: OperationLogConfig.Retention) throws {
        var fixture = EngineFixture()
        fixture.config.operationLog.retention = retention
        fixture.config.operationLog.retentionMinAge = retention == .keep ? .zero : .seconds(3600)
        let engine = try fixture.open()
        let me = engine.nodeID
        for _ in 0 ..< 5 { engine.appendOperation(kind: "op", payload: []) }
        engine.flushNow()
        engine.recordAcknowledgement(from: NodeID(), clock: [me: 5])
        engine.flushNow()
        #expect(try stored(fixture).log.count == 5)
        #expect(engine.metrics.operationsDropped == 0)
        try engine.shutdown()
    }

    @Test func aLargeBacklogIsDroppedABoundedStepPerBatch() throws {
        var fixture = EngineFixture()
        fixture.config.operationLog.retentionMinAge = .zero
        let engine = try fixture.open()
        let me = engine.nodeID, peer = NodeID()
        let total = Int(OperationRowsPart.dropsPerNodeAndBatch) + 5
        for _ in 0 ..< total { engine.appendOperation(kind: "op", payload: []) }
        engine.flushNow()
        engine.recordAcknowledgement(from: peer, clock: [me: Int64(total)])
        engine.flushNow()
        #expect(try stored(fixture).log.count == 5, "one step: \(OperationRowsPart.dropsPerNodeAndBatch)")
        engine.recordAcknowledgement(from: peer, clock: [me: Int64(total)])
        engine.flushNow()
        #expect(try stored(fixture).log.isEmpty, "the next acknowledgement takes the rest")
        try engine.shutdown()
    }
}

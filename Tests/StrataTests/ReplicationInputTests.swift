import GRDB
import Foundation
import Testing
@testable import Strata

/// What a device cannot apply (a type or payload version it does not know, bytes that
/// do not decode, a stamp from the future) is kept, reported and applied when it can
/// be; it never crashes the tick nor blocks the operations behind it.
@Suite struct ReplicationInputTests {
    let localTypes: [any Component.Type] = testComponents + [SharedPosition.self]

    @Test func aTypeThisBuildDoesNotKnowIsKeptByteForByteAndAppliedByOneThatDoes() throws {
        let a = try Replica("unknown-a"), b = try Replica("unknown-b", types: localTypes)
        let server = LoopbackServer()
        let shape = a.world.spawn(SharedPosition(x: 3, y: 4), SharedLabel("kept"))
        let id = try #require(a.world.id(of: shape))
        try server.deliver(from: a, to: b)
        let there = try #require(b.entity(id))
        #expect(b.world.get(SharedPosition.self, for: there) == SharedPosition(x: 3, y: 4), "what it knows is applied")
        #expect(b.engine.replicationStatus.heldNow == ["unknown type": 1])
        #expect(b.engine.flushNow())
        try b.restart(types: replicatedTestComponents)   // the next build knows the type
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(id))) == SharedLabel("kept"))
        #expect(b.engine.replicationStatus.heldNow.isEmpty)
        #expect(a.world.digest().replicated == b.world.digest().replicated)
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    @Test func devicesOnTwoPayloadVersionsConvergeOnceBothKnowTheNewerOne() throws {
        let newer: [any Component.Type] = localTypes + [SharedLabelV2.self]
        let a = try Replica("versions-a", types: newer), b = try Replica("versions-b")
        let server = LoopbackServer()
        let shape = a.world.spawn(SharedPosition(x: 0, y: 0), SharedLabelV2("red", color: 0xff0000))
        let id = try #require(a.world.id(of: shape))
        #expect(a.engine.flushNow())
        try server.push(from: a)
        server.pullAll(into: b)
        #expect(b.world.get(SharedLabel.self, for: try #require(b.entity(id))) == nil, "version 2: this build cannot read it")
        #expect(b.engine.replicationStatus.heldNow == ["newer payload version": 1])
        // The older build edits another shape; the newer one reads its version 1.
        let other = b.world.spawn(SharedLabel("from the older build"))
        let otherID = try #require(b.world.id(of: other))
        #expect(b.engine.flushNow())
        try server.push(from: b)
        server.pullAll(into: a)
        #expect(a.world.get(SharedLabelV2.self, for: try #require(a.entity(otherID))) == SharedLabelV2("from the older build", color: 0))
        try b.restart(types: newer)
        #expect(b.world.get(SharedLabelV2.self, for: try #require(b.entity(id))) == SharedLabelV2("red", color: 0xff0000))
        #expect(a.engine.flushNow() && b.engine.flushNow())
        #expect(a.world.digest().replicated == b.world.digest().replicated)
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    @Test func badOperationsAreKeptReportedAndDoNotBlockTheOnesBehind() throws {
        let b = try Replica("bad-b")
        let now = b.wall.milliseconds
        let peer = NodeID()
        let victim = EntityID()
        let component = ReplicatedOperation.component(entity: victim, type: SharedLabel.typeName, version: 1, payload: [0xFF])
        let operations = [
            peerOperation(component, node: peer, seq: 1, milliseconds: now, payload: [1, 2, 3]),   // does not parse
            peerOperation(component, node: peer, seq: 2, milliseconds: now),                      // does not decode
            peerOperation(.component(entity: EntityID(), type: SharedLabel.typeName, version: 1, payload: nil), node: peer, seq: 3,
                          milliseconds: now + 3_600_000),                                            // an hour ahead
            peerOperation(.component(entity: EntityID(), type: "test.shared_label", version: 1,
                                     payload: SharedLabel("fine").encodedForTest[...]), node: peer, seq: 4, milliseconds: now),
        ]
        for operation in operations { b.engine.receiveOperation(operation) }
        // Neither Strata's own bookkeeping nor a type this build keeps local is another device's to set.
        let existing = b.world.spawn(Title("mine"))
        #expect(b.engine.flushNow())
        let existingID = try #require(b.world.id(of: existing))
        for (seq, type) in [(Int64(5), ReplicaState.typeName), (6, Title.typeName)] {
            b.engine.receiveOperation(peerOperation(.component(entity: existingID, type: type, version: 1, payload: [1, 2]),
                                                    node: peer, seq: seq, milliseconds: now))
        }
        #expect(b.world.get(Title.self, for: existing) == Title("mine"))
        #expect(b.world.get(ReplicaState.self, for: existing)?.heldValue(of: Title.typeName)?.reason == .unknownType)
        b.world.despawn(existing)
        let status = b.engine.replicationStatus
        #expect(status.malformed == 1 && status.applied == 1)
        #expect(status.heldNow == ["undecodable": 1, "stamped in the future": 1])
        #expect(b.world.count(of: SharedLabel.self) == 1, "the good one behind them applied")
        #expect(b.engine.vectorClock[peer] == 6, "every one of them is in the log")
        // The future stamp did not drag this device's clock along.
        let local = b.world.spawn(SharedLabel("mine"))
        #expect(b.engine.flushNow())
        let mine = try #require(try b.committedOperations(after: 0).last)
        #expect(mine.timestamp.milliseconds < now + 60_000)
        _ = local
        // The undecodable value is kept across a restart; the future one applies once its time comes.
        try b.restart()
        #expect(b.engine.replicationStatus.heldNow == ["undecodable": 1, "stamped in the future": 1])
        b.tick(.seconds(3_200))
        #expect(b.engine.replicationStatus.heldNow == ["undecodable": 1, "stamped in the future": 1],
                "not yet: still more than max_clock_ahead_secs ahead")
        b.tick(.seconds(200))
        b.tick()
        #expect(b.engine.replicationStatus.heldNow == ["undecodable": 1])
        #expect(b.changes.contains { $0.kind == .removed })
        try b.engine.shutdown()
    }

    /// A pulled slice's values are decoded in runs of one type (`StagedValues`): every
    /// value must end as it would one operation at a time, whatever the slice mixes.
    @Test func aPulledSliceDecidesEveryValueAsOneOperationAtATimeDoes() throws {
        let single = try Replica("slice-single"), sliced = try Replica("slice-runs")
        let now = single.wall.milliseconds
        let peer = NodeID()
        let ids = (0 ..< 6).map { _ in EntityID() }
        var seq: Int64 = 0
        func op(_ operation: ReplicatedOperation, at offset: Int64 = 0, payload: [UInt8]? = nil) -> LoggedOperation {
            seq += 1
            return peerOperation(operation, node: peer, seq: seq, milliseconds: now + offset, payload: payload)
        }
        func label(_ id: EntityID, _ text: String, at offset: Int64 = 0) -> LoggedOperation {
            op(.component(entity: id, type: SharedLabel.typeName, version: 1, payload: SharedLabel(text).encodedForTest[...]), at: offset)
        }
        func position(_ id: EntityID, _ x: Float) -> LoggedOperation {
            op(.component(entity: id, type: SharedPosition.typeName, version: 1, payload: SharedPosition(x: x, y: -0.0).encodedForTest[...]))
        }
        let operations = [
            label(ids[0], "a"), label(ids[1], "b"),
            op(.component(entity: ids[2], type: SharedLabel.typeName, version: 1, payload: [0xFF])),   // does not decode, mid-run
            label(ids[3], "d"),
            label(ids[0], "a, later", at: 5),            // the same entity again in the run
            label(ids[1], "b, earlier", at: -5),         // a lower stamp: superseded
            position(ids[3], 1.5), position(ids[4], .nan),   // another type: a new run
            op(.component(entity: ids[4], type: SharedPosition.typeName, version: 1, payload: nil), at: 1),   // removes a staged value
            label(ids[5], "despawned next"), op(.despawn(entity: ids[5])),
            label(ids[5], "after its despawn", at: 9),
        ]
        for operation in operations { single.engine.receiveOperation(operation) }
        sliced.engine.receiveOperations(operations)
        #expect(sliced.world.digest() == single.world.digest())
        #expect(sliced.world.get(SharedLabel.self, for: try #require(sliced.entity(ids[0]))) == SharedLabel("a, later"))
        #expect(sliced.world.get(SharedLabel.self, for: try #require(sliced.entity(ids[1]))) == SharedLabel("b"))
        #expect(sliced.world.get(SharedPosition.self, for: try #require(sliced.entity(ids[4]))) == nil)
        #expect(sliced.entity(ids[5]) == nil)
        let (a, b) = (single.engine.replicationStatus, sliced.engine.replicationStatus)
        #expect(b.applied == a.applied && b.superseded == a.superseded && b.afterDespawn == a.afterDespawn && b.held == a.held)
        #expect(b.heldNow == ["undecodable": 1])
        #expect(Set(sliced.changes.map { "\($0)" }) == Set(single.changes.map { "\($0)" }))
        #expect(sliced.engine.flushNow() && single.engine.flushNow())
        try sliced.restart()
        #expect(sliced.world.digest() == single.world.digest(), "and as committed")
        try single.engine.shutdown(); try sliced.engine.shutdown()
    }

    @Test func aChangeMadeHereAndNotYetLoggedWinsOverAnOperationThatArrivesBeforeItsFlush() throws {
        let a = try Replica("pending-a"), b = try Replica("pending-b")
        let server = LoopbackServer()
        let shape = a.world.spawn(SharedLabel("start"))
        let id = try #require(a.world.id(of: shape))
        #expect(a.engine.flushNow())
        try server.push(from: a)
        server.pullAll(into: b)
        a.world.insert(SharedLabel("a, flushed first"), for: shape)
        #expect(a.engine.flushNow())
        try server.push(from: a)
        let there = try #require(b.entity(id))
        b.world.insert(SharedLabel("b, made before a's arrived"), for: there)   // not flushed yet
        server.pullAll(into: b)
        #expect(b.world.get(SharedLabel.self, for: there) == SharedLabel("b, made before a's arrived"))
        #expect(b.engine.flushNow())
        try server.push(from: b)
        server.pullAll(into: a)
        #expect(a.world.get(SharedLabel.self, for: shape) == SharedLabel("b, made before a's arrived"))
        try a.engine.shutdown(); try b.engine.shutdown()
    }

    @Test func theReplicaStateReadsBackWhatItWrote() throws {
        var state = ReplicaState()
        ReplicaState.set(&state.stamps, "b", OperationStamp(timestamp: -1, nodeHigh: 0, nodeLow: .max))
        ReplicaState.set(&state.stamps, "a", OperationStamp(timestamp: 5 << 16, nodeHigh: .max, nodeLow: 1))
        state.hold("d", HeldValue(stamp: .zero, version: 1, payload: nil, reason: .future))
        state.hold("c", HeldValue(stamp: OperationStamp(timestamp: 9, nodeHigh: 2, nodeLow: 3), version: 4, payload: [0, 0xFF], reason: .newerVersion))
        #expect(state.stamps.map(\.type) == ["a", "b"] && state.held.map(\.type) == ["c", "d"], "kept in name order")
        ReplicaState.set(&state.stamps, "c", OperationStamp(timestamp: 10, nodeHigh: 2, nodeLow: 3))
        state.hold("c", HeldValue(stamp: OperationStamp(timestamp: 11, nodeHigh: 2, nodeLow: 3), version: 4, payload: [0, 0xFF], reason: .newerVersion))
        // Self-contained (version 2: a parked row).
        var writer = PayloadWriter()
        state.encode(to: &writer)
        #expect(try Self.decode(writer.bytes, version: ReplicaState.selfContainedVersion) == state)
        for cut in 1 ..< writer.bytes.count {
            #expect(throws: (any Error).self, "cut at \(cut)") { try Self.decode(Array(writer.bytes.prefix(cut)), version: 2) }
        }
        #expect(throws: (any Error).self, "version 3 needs the document's numbers") { try Self.decode(writer.bytes, version: 3) }
        // As the writer stores it (version 3: the document's numbers).
        let document = try StampDocument()
        let stored = try document.encode(state)
        #expect(try document.decode(stored) == state)
        for cut in 1 ..< stored.count {
            #expect(throws: (any Error).self, "cut at \(cut)") { try document.decode(Array(stored.prefix(cut))) }
        }
    }

    /// A stored state costs at most 16 bytes per stamped type (a shape's two from one
    /// device: 18 bytes, 66 in version 2).
    @Test func aStoredStateCostsAtMostSixteenBytesAStamp() throws {
        let document = try StampDocument()
        let node = NodeID()
        let now = HybridTimestamp(milliseconds: 1_800_000_000_000).rawValue
        for types in 1 ... 4 {
            var state = ReplicaState()
            for t in 0 ..< types {
                ReplicaState.set(&state.stamps, "canvas.type\(t)", OperationStamp(timestamp: HybridTimestamp(rawValue: now + Int64(t) * 3), node: node))
            }
            let stored = try document.encode(state)
            #expect(stored.count <= 16 * types, "\(types) stamps: \(stored.count) bytes")
            #expect(try document.decode(stored) == state)
            var selfContained = PayloadWriter()
            state.encode(to: &selfContained)
            #expect(stored.count < selfContained.bytes.count)
        }
    }

    /// The metrics say which share of the payload is the engine's stamps (the reports print
    /// the bytes written per payload byte with and without them).
    @Test func theStampsShareOfThePayloadIsCounted() throws {
        let a = try Replica("stamps-a")
        a.world.spawn(Position(x: 1, y: 2))
        #expect(a.engine.flushNow())
        #expect(a.engine.metrics.stampPayloadBytesWritten == 0, "a local type has no stamps")
        let before = a.engine.metrics
        let shared = a.world.spawn(SharedPosition(x: 1, y: 2))
        #expect(a.engine.flushNow())
        let after = a.engine.metrics
        let stamps = after.stampPayloadBytesWritten - before.stampPayloadBytesWritten
        let state = a.world.replicaState(at: shared.index)
        #expect(state.stamps.count == 1)
        #expect(stamps == (try a.storedForTest(state)).count, "the replicated entity's stamps, as stored")
        #expect(after.payloadBytesWritten - before.payloadBytesWritten == stamps + SharedPosition(x: 1, y: 2).encodedForTest.count)
        try a.engine.shutdown()
    }

    /// The reports' headline divides by the host's data: its components and the operations
    /// logged here (its own kinds, and those derived from its synced components), not the
    /// engine's stamps nor the operations received from another device.
    @Test func theHostsDataIsToldApartFromTheStampsAndWhatOtherDevicesSent() throws {
        let (a, b, server) = (try Replica("shares-a"), try Replica("shares-b"), LoopbackServer())
        let start = a.engine.metrics
        let shared = a.world.spawn(SharedPosition(x: 1, y: 2))
        _ = a.engine.appendOperation(kind: "host.note", payload: [1, 2, 3])
        #expect(a.engine.flushNow())
        var shares = PayloadShares(a.engine.metrics, since: start)
        let value = SharedPosition(x: 1, y: 2).encodedForTest.count
        let derived = try a.committedOperations(after: 0).filter { $0.kind == ReplicatedOperation.componentKind }.map(\.payload.count)
        #expect(derived.count == 1 && derived[0] > value, "the derived operation carries the value")
        #expect(shares.components == value)
        #expect(shares.stamps == (try a.storedForTest(a.world.replicaState(at: shared.index))).count)
        #expect(shares.operations == derived[0] + 3 && shares.derivedOperations == derived[0])
        #expect(shares.received == 0 && shares.hostData == value + derived[0] + 3)

        b.world.spawn(SharedLabel("from b"))
        try server.deliver(from: b, to: a)
        let before = a.engine.metrics
        #expect(a.engine.flushNow())
        shares = PayloadShares(a.engine.metrics, since: before)
        let sent = server.operations.filter { $0.node == b.engine.nodeID }.reduce(0) { $0 + $1.payload.count }
        #expect(sent > 0 && shares.received == sent, "b's operations are received, not a's data")
        #expect(shares.operations == 0 && shares.derivedOperations == 0)
        #expect(shares.perHostByte(100) == Double(100) / Double(shares.hostData))
        try a.engine.shutdown()
        try b.engine.shutdown()
    }

    /// A file written before version 3 holds its states in version 2 (names and nodes in
    /// full): the reload still reads them, stamps of replicated types into the stamp table.
    @Test func aStoredStateOfVersionTwoStillLoads() throws {
        let a = try Replica("version-two")
        let shape = a.world.spawn(SharedPosition(x: 1, y: 2))
        a.world.insert(SharedLabel("two"), for: shape)
        #expect(a.engine.flushNow())
        let state = a.world.replicaState(at: shape.index)
        #expect(state.stamps.count == 2)
        let number = a.world.records[Int(shape.index)].number
        try a.engine.shutdown()
        // The state again, as the newest record of its key, in version 2.
        let queue = try DatabaseQueue(path: a.fixture.directory.databasePath)
        try queue.write { db in
            let typeID = try #require(try Int64.fetchOne(db, sql: "SELECT id FROM component_types WHERE name = ?", arguments: [ReplicaState.typeName]))
            let seq = (try Int64.fetchOne(db, sql: "SELECT max(id) FROM segments")).map { Segment.seq(ofID: $0) + 1 } ?? 1
            var payload = PayloadWriter()
            state.encode(to: &payload)
            var records = [SegmentEncoder.Pending(key: SegmentKey(entity: number, typeID: typeID), version: 2, payload: 0 ..< payload.bytes.count)]
            var encoder = SegmentEncoder()
            let chunks = payload.bytes.withUnsafeBytes { encoder.encode(&records, arena: $0) }
            _ = try Segment.insert(chunks, seq: seq, createdAt: 0, db)
        }
        try queue.close()
        try a.restart()
        #expect(a.world.replicaState(at: shape.index) == state)
        #expect(a.world.withStamps { $0.stamp(a.world.replicatedColumn(named: SharedLabel.typeName)!, shape.index) }
                    == state.stamp(of: SharedLabel.typeName), "in the stamp table, not the state column")
        #expect(!a.world.has(ReplicaState.self, shape), "nothing held: the state column keeps nothing")
        try a.engine.shutdown()
    }

    @Test func aReplicaStateOfVersionOneStillReads() throws {
        // Version 1, as schema 16's builds wrote it: ["canvas.a": (timestamp 7, node 0…01)], no held value.
        let node = [UInt8](repeating: 0, count: 15) + [1]
        var writer = PayloadWriter()
        writer.write(UInt64(1)); writer.write("canvas.a"); writer.write(Int64(7))
        let bytes = writer.bytes + node + [0]
        let state = try Self.decode(bytes, version: 1)
        #expect(state.stamp(of: "canvas.a") == OperationStamp(timestamp: 7, nodeHigh: 0, nodeLow: 1) && state.held.isEmpty)
    }

    @Test func aShapesStampsFitOnA512BytePage() throws {
        // A `components` row keeps at most 102 bytes on a 512-byte page; the key and the
        // record's header take about 10 of them.
        var state = ReplicaState()
        let node = OperationStamp(timestamp: 0, nodeHigh: .max, nodeLow: .max)
        let now = Int64(1_800_000_000_000) << 16
        ReplicaState.set(&state.stamps, "canvas.shape_style", OperationStamp(timestamp: now, nodeHigh: node.nodeHigh, nodeLow: node.nodeLow))
        ReplicaState.set(&state.stamps, "canvas.transform", OperationStamp(timestamp: now + (600_000 << 16), nodeHigh: node.nodeHigh, nodeLow: node.nodeLow))
        #expect(state.encodedForTest.count <= 70)
        ReplicaState.set(&state.stamps, "canvas.transform", OperationStamp(timestamp: now + (900_000 << 16), nodeHigh: 1, nodeLow: 2))
        #expect(state.encodedForTest.count <= 88, "moved on another device")
        #expect(try Self.decode(state.encodedForTest, version: 2) == state)
        // A stroke's: the last name shares more bytes with the one before it than are left to read.
        var stroke = ReplicaState()
        ReplicaState.set(&stroke.stamps, "canvas.stroke_points", OperationStamp(timestamp: now, nodeHigh: 1, nodeLow: 2))
        ReplicaState.set(&stroke.stamps, "canvas.stroke_style", OperationStamp(timestamp: now, nodeHigh: 1, nodeLow: 2))
        #expect(try Self.decode(stroke.encodedForTest, version: 2) == stroke)
    }

    @Test func aDamagedReplicaStateIsRefusedNotMisread() {
        // A name sharing more than the name before it has, a node index past the list.
        var writer = PayloadWriter()
        writer.write(UInt64(0)); writer.write(UInt64(1)); writer.write(UInt64(3)); writer.write("a")
        #expect(throws: PayloadError.self) { try Self.decode(writer.bytes + [0, 0, 0], version: 2) }
        writer = PayloadWriter()
        writer.write(UInt64(0)); writer.write(UInt64(1)); writer.write(UInt64(0)); writer.write("a"); writer.write(Int64(1)); writer.write(UInt64(0))
        #expect(throws: PayloadError.self) { try Self.decode(writer.bytes + [0], version: 2) }
    }

    static func decode(_ bytes: [UInt8], version: Int) throws -> ReplicaState {
        try bytes.withUnsafeBytes { raw in
            var reader = PayloadReader(raw)
            return try ReplicaState(from: &reader, version: version)
        }
    }
}

extension Component {
    var encodedForTest: [UInt8] {
        var writer = PayloadWriter()
        encode(to: &writer)
        return writer.bytes
    }
}

/// A document's numbers for stored stamps (`replica_nodes`, `component_types`), in memory:
/// a state encoded as the writer stores it (version 3), and read back as the reload reads it.
struct StampDocument {
    let queue: DatabaseQueue

    init() throws {
        queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: """
                CREATE TABLE component_types (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                CREATE TABLE replica_nodes (idx INTEGER PRIMARY KEY, node BLOB NOT NULL UNIQUE CHECK (length(node) = 16));
                """)
        }
    }

    func encode(_ state: ReplicaState) throws -> [UInt8] {
        let index = StampIndex()
        return try queue.write { db in
            var writer = PayloadWriter()
            try state.encode(to: &writer, index: index, db)
            return writer.bytes
        }
    }

    /// Every stamp read back into the state (no type is a replicated column here).
    func decode(_ bytes: [UInt8]) throws -> ReplicaState {
        let names = try queue.read { db in try StampNames(db, world: World()) }
        return try bytes.withUnsafeBytes { raw in
            var reader = PayloadReader(raw)
            let state = try ReplicaState(version3: &reader, names: names) { _, _ in Issue.record("no replicated column") }
            guard reader.isAtEnd else { throw PayloadError.invalid("\(raw.count - reader.offset) bytes left") }
            return state
        }
    }
}

extension Replica {
    /// `state` as this replica's writer stores it (its own numbers, read in a transaction rolled back).
    func storedForTest(_ state: ReplicaState) throws -> [UInt8] {
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        defer { try? queue.close() }
        var bytes: [UInt8] = []
        try queue.inTransaction { db in
            var writer = PayloadWriter()
            try state.encode(to: &writer, index: StampIndex(), db)
            bytes = writer.bytes
            return .rollback
        }
        return bytes
    }
}

import Foundation
@testable import Strata

/// A critical replicated type (a shape's label), beside the derived ``SharedPosition``.
struct SharedLabel: Component, Equatable {
    static let typeName = "test.shared_label"
    static let tier = Tier.critical
    static let replication = Replication.lastWriterWins
    var text: String

    init(_ text: String) { self.text = text }
    func encode(to payload: inout PayloadWriter) { payload.write(text) }
    init(from payload: inout PayloadReader, version: Int) throws { text = try payload.read() }
}

/// The replicated types every replica of the tests knows, with the local ones.
let replicatedTestComponents: [any Component.Type] = testComponents + [SharedPosition.self, SharedLabel.self]

/// One device of a shared document, in one process: a real engine on a file of its own,
/// in virtual time, with a wall clock of its own (devices' clocks differ).
final class Replica {
    let name: String
    var fixture: EngineFixture
    let wall: TestWallClock
    private(set) var engine: Engine
    private(set) var types: [any Component.Type]
    /// What the engine told the host, since the replica was made.
    var changes: [ReplicatedChange] = []

    init(_ name: String, types: [any Component.Type] = replicatedTestComponents, wallStart: Int64 = 1_800_000_000_000,
         configure: (inout EngineFixture) -> Void = { _ in }) throws {
        self.name = name
        fixture = EngineFixture(name)
        let wall = TestWallClock(start: wallStart)
        self.wall = wall
        fixture.options.wallClock = { wall.milliseconds }
        configure(&fixture)
        self.types = types
        engine = try Engine.open(config: fixture.config, components: types, logger: quietLogger, options: fixture.options)
        observe()
    }

    private func observe() {
        engine.onReplicatedChange = { [weak self] change in self?.changes.append(change) }
    }

    var world: World { engine.world }

    /// A clean restart, with `types` (default: the same ones).
    func restart(types: [any Component.Type]? = nil) throws {
        try engine.shutdown()
        try reopen(types: types)
    }

    /// Stops as a SIGKILL would (what was not handed to the writer is lost) and opens again.
    func crash() throws {
        engine.abandon()
        try reopen(types: nil)
    }

    private func reopen(types: [any Component.Type]?) throws {
        if let types { self.types = types }
        engine = try Engine.open(config: fixture.config, components: self.types, logger: quietLogger, options: fixture.options)
        observe()
    }

    /// This replica's own operations committed to its file, above `sequence`.
    func committedOperations(after sequence: Int64) throws -> [LoggedOperation] {
        try OperationLogReader(path: fixture.directory.databasePath).operations(of: engine.nodeID, after: sequence, limit: 1_000_000)
    }

    /// Advances virtual time and the wall clock, then ends a tick.
    func tick(_ duration: Duration = .milliseconds(16)) {
        fixture.clock.advance(by: duration)
        wall.advance(by: duration)
        engine.endTick()
    }

    /// The first live entity whose id is `id`.
    func entity(_ id: EntityID) -> Entity? { world.entity(for: id) }
}

/// The server between replicas: every operation pushed to it, in push order. Pushing
/// reads what a replica committed (only committed operations leave a device).
final class LoopbackServer {
    private(set) var operations: [LoggedOperation] = []
    private var pushedThrough: [NodeID: Int64] = [:]

    /// Takes the replica's committed operations not pushed yet.
    @discardableResult
    func push(from replica: Replica) throws -> Int {
        let node = replica.engine.nodeID
        let new = try replica.committedOperations(after: pushedThrough[node] ?? 0)
        // A crash can lose operations the file never had; a sequence is pushed once.
        operations += new
        if let last = new.last { pushedThrough[node] = last.seq }
        return new.count
    }

    /// `from` commits what it has (a flush), pushes it, and `to` pulls everything it lacks.
    func deliver(from: Replica, to: Replica) throws {
        guard from.engine.flushNow() else { throw FlushFailed(replica: from.name) }
        try push(from: from)
        pullAll(into: to)
    }

    /// Every operation the replica does not have yet is received by it, in server order.
    func pullAll(into replica: Replica) {
        for operation in operations where operation.node != replica.engine.nodeID {
            replica.engine.receiveOperation(operation)
        }
    }
}

/// A replica's flush did not commit (``LoopbackServer/deliver(from:to:)``).
struct FlushFailed: Error, CustomStringConvertible {
    let replica: String
    var description: String { "\(replica): the flush did not commit" }
}

/// ``SharedLabel`` as a newer build encodes it (payload version 2: a color too).
struct SharedLabelV2: Component, Equatable {
    static let typeName = SharedLabel.typeName
    static let tier = Tier.critical
    static let replication = Replication.lastWriterWins
    static let payloadVersion = 2
    var text: String
    var color: Int

    init(_ text: String, color: Int) { self.text = text; self.color = color }
    func encode(to payload: inout PayloadWriter) { payload.write(text); payload.write(color) }
    init(from payload: inout PayloadReader, version: Int) throws {
        text = try payload.read()
        color = version >= 2 ? try payload.read() : 0
    }
}

/// An operation of another device, made by hand (bad input, clock skew).
func peerOperation(_ operation: ReplicatedOperation, node: NodeID = NodeID(), seq: Int64 = 1, milliseconds: Int64,
                   payload: [UInt8]? = nil) -> LoggedOperation {
    LoggedOperation(node: node, seq: seq, timestamp: HybridTimestamp(milliseconds: milliseconds), kind: operation.kind,
                    payload: payload ?? operation.encoded())
}

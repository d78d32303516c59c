import Foundation
import Testing
@testable import Strata

/// A backlog of replicated changes (a level load, an import) is logged a tick at a time
/// ahead of its critical drain, and commits with that drain as if the drain had logged it.
@Suite struct ReplicationBacklogTests {
    static let shapes = 3 * World.replicatedBacklog / 2
    /// Enough shapes for a bulk batch (a value, a label and their stamps each): its new
    /// entities' rows are inserted, not replaced, so a key twice in it would fail the commit.
    static let bulkShapes = WriteBatch.bulkRows / 3 + 1000

    /// The operations `replica` committed of `kind`.
    func logged(_ replica: Replica, kind: String = ReplicatedOperation.componentKind) throws -> [ReplicatedOperation] {
        try replica.committedOperations(after: 0).filter { $0.kind == kind }
            .map { try ReplicatedOperation(kind: $0.kind, payload: $0.payload) }
    }

    @Test func aBacklogIsLoggedAtTheEndOfItsTickAndCommitsWithTheDrain() throws {
        let a = try Replica("backlog-a")
        var spawned: [(entity: Entity, id: EntityID)] = []
        for i in 0 ..< Self.bulkShapes {
            let shape = a.world.spawn(SharedPosition(x: Float(i), y: 0), SharedLabel("shape \(i)"))
            spawned.append((shape, try #require(a.world.id(of: shape))))
        }
        a.tick()
        // Logged at the end of the tick that saw the backlog, long before the critical drain is due.
        #expect(a.world.operationLog.pending.count == 2 * Self.bulkShapes)
        #expect(a.world.replicas.loggedAhead.writes.count == 2 * Self.bulkShapes)
        #expect(try logged(a).isEmpty, "nothing committed yet")

        // Before the drain: one shape moves again, one is despawned, one gets a new label.
        a.world.mutate(SharedPosition.self, of: spawned[0].entity) { $0.x = -1 }
        a.world.despawn(spawned[1].entity)
        a.world.insert(SharedLabel("renamed"), for: spawned[2].entity)
        #expect(a.engine.flushNow())
        #expect(a.engine.metrics.failedCommits == 0, "a key logged ahead and again is one row of the commit")
        #expect(a.world.replicas.loggedAhead.writes.isEmpty)
        #expect(try logged(a).count == 2 * Self.bulkShapes + 2, "every value once, the two changes since once more")
        #expect(try logged(a, kind: ReplicatedOperation.despawnKind).count == 1)

        try a.restart()
        let world = a.world
        #expect(world.entity(for: spawned[1].id) == nil, "a row logged ahead of a despawn is not written")
        let moved = try #require(world.entity(for: spawned[0].id))
        #expect(world.get(SharedPosition.self, for: moved)?.x == -1, "the newer value, not the one logged ahead")
        let renamed = try #require(world.entity(for: spawned[2].id))
        #expect(world.get(SharedLabel.self, for: renamed)?.text == "renamed")
        let last = try #require(world.entity(for: spawned[Self.bulkShapes - 1].id))
        #expect(world.get(SharedPosition.self, for: last)?.x == Float(Self.bulkShapes - 1))
        #expect(world.get(SharedLabel.self, for: last)?.text == "shape \(Self.bulkShapes - 1)")
        #expect(world.entities(with: SharedPosition.self).count == Self.bulkShapes - 1)
        try a.engine.shutdown()
    }

    /// Logging ahead does not move the critical drain: it stays due when the backlog's
    /// first change made it due.
    @Test func loggingAheadDoesNotBringTheDrainForward() throws {
        let a = try Replica("backlog-due") {
            $0.config.sync.replicateInterval = .seconds(3)
            $0.config.persistence.flushInterval = .seconds(30)
        }
        let shapes = (0 ..< Self.shapes).map { a.world.spawn(SharedPosition(x: Float($0), y: 0)) }
        #expect(a.engine.flushNow())
        #expect(try logged(a).count == Self.shapes)
        for shape in shapes { a.world.mutate(SharedPosition.self, of: shape) { $0.y = 1 } }
        a.tick()
        #expect(a.world.replicas.loggedAhead.writes.count == Self.shapes, "logged ahead")
        for _ in 0 ..< 150 { a.tick() }   // 2.4 s: past the critical delay, not the interval
        #expect(a.engine.waitForWriter())
        #expect(try logged(a).count == Self.shapes, "not yet: the interval is 3 s")
        for _ in 0 ..< 50 { a.tick() }    // 3.2 s
        #expect(a.engine.waitForWriter())
        #expect(try logged(a).count == 2 * Self.shapes)
        try a.engine.shutdown()
    }
}

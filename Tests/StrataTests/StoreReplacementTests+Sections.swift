import Foundation
import GRDB
import Testing
@testable import Strata

/// Every section of a batch that waits when the file is found corrupt reaches the new file
/// (``BatchSection/carryOver(from:into:world:)``). The two switches below make a new
/// section a compile error here until the test fills it and checks it.
extension StoreReplacementTests {
    /// What the test did to the world, to check in the new file.
    final class Filled {
        var despawned: [EntityID] = []
        var spawned: [EntityID] = []
        var edited: [EntityID: String] = [:]
        var operations = 0
        var lastSequence: Int64 = 0
        let peer = NodeID()
        var replayed = 0
    }

    /// Puts rows of `section` into the next batch, through the engine's API.
    func fill(_ section: BatchSection, _ engine: Engine, _ ids: [EntityID], _ filled: Filled) throws {
        let world = engine.world
        switch section {
        case .entityDeletes:
            // Every seventh entity: the deletes reach every leaf of `entities`, the damaged one too.
            for (i, id) in ids.enumerated() where i % 7 == 0 {
                if let entity = world.entity(for: id) { world.despawn(entity) }
                filled.despawned.append(id)
            }
        case .entityInserts:
            for i in 0 ..< 25 { filled.spawned.append(world.id(of: world.spawn(Title("new \(i)")))!) }
        case .settings:
            world.setSetting(.integer(7), for: "zoom")
            world.setSetting(nil, for: "theme")   // in the damaged file: the salvage copies it back
        case .operations:
            for i in 0 ..< 10 { filled.lastSequence = engine.appendOperation(kind: "shape.move", payload: [UInt8(i)]).seq }
            filled.operations = 10
        case .vectorClock:
            engine.appendOperation(kind: "shape.clock", payload: [])   // moves the clock again
            filled.operations += 1
            filled.lastSequence += 1
        case .peerAcks:
            engine.recordAcknowledgement(from: filled.peer, clock: [engine.nodeID: 5])
        case .replayedRejections:
            filled.replayed = try engine.replayRejectedWrites().replayed   // hands the batch to the writer
        case .components:
            for (i, id) in ids.enumerated() where i % 5 == 0 && i % 7 != 0 {
                guard let entity = world.entity(for: id) else { continue }
                world.insert(Title("edited \(i)", revision: 1), for: entity)
                filled.edited[id] = "edited \(i)"
            }
        }
    }

    /// Checks `section`'s rows in the reopened document.
    func check(_ section: BatchSection, _ engine: Engine, _ filled: Filled, operationsBefore: Int) throws {
        let world = engine.world
        switch section {
        case .entityDeletes:
            #expect(!filled.despawned.isEmpty)
            #expect(filled.despawned.allSatisfy { world.entity(for: $0) == nil }, "no despawned entity comes back")
        case .entityInserts:
            #expect(filled.spawned.count == 25)
            #expect(filled.spawned.allSatisfy { world.entity(for: $0) != nil })
        case .settings:
            #expect(world.setting("zoom") == .integer(7))
            #expect(world.setting("theme") == nil, "a removal that waited is not undone by the salvage")
            #expect(world.setting("forbidden") == .string("now allowed"), "the replayed row")
        case .operations:
            #expect(engine.recovery.operations.operations == operationsBefore + filled.operations)
            #expect(engine.recovery.operations.gaps == 0)
        case .vectorClock:
            #expect(engine.world.operationLog.vectorClock[engine.nodeID] == filled.lastSequence)
            #expect(engine.recovery.operations.vectorClockRepairs.isEmpty, "\(engine.recovery.operations.vectorClockRepairs)")
        case .peerAcks:
            let queue = try DatabaseQueue(path: engine.store.location.path)
            defer { try? queue.close() }
            let seq = try queue.read { db in
                try Int64.fetchOne(db, sql: "SELECT seq FROM peer_acks WHERE peer = ?", arguments: [filled.peer.withBytes { Data($0) }])
            }
            #expect(seq == 5)
        case .replayedRejections:
            #expect(filled.replayed == 1)
            #expect(try engine.rejectedWrites().isEmpty, "the replayed row is deleted from the new file too")
        case .components:
            #expect(!filled.edited.isEmpty)
            for (id, text) in filled.edited {
                #expect(world.entity(for: id).flatMap { world.get(Title.self, for: $0) }?.text == text)
            }
        }
    }

    @Test func everySectionThatWaitsWhenTheFileIsReplacedReachesTheNewFile() throws {
        var fixture = despawningAtOnce()
        let ids = try makeDocument(fixture)   // 3,000 entities, "theme", 40 operations
        // A setting a trigger refuses: parked in rejected_writes, replayed below.
        fixture.options.prepareConnection = { db in
            try db.execute(sql: """
                CREATE TEMP TRIGGER refuse_key BEFORE INSERT ON settings WHEN NEW.key = 'forbidden'
                BEGIN SELECT RAISE(ABORT, 'this key is refused'); END
                """)
        }
        do {
            let engine = try fixture.open()
            engine.world.setSetting(.string("now allowed"), for: "forbidden")
            #expect(engine.flushNow())
            #expect(try engine.rejectedWrites().count == 1)
            try engine.shutdown()
        }
        fixture.options.prepareConnection = nil

        let engine = try fixture.open()
        _ = try damageLeafPage(of: "entities", skip: 2, in: fixture.directory.databasePath)
        let filled = Filled()
        for section in BatchSection.allCases { try fill(section, engine, ids, filled) }
        #expect(engine.flushNow(), "the commit fails on the damaged page; the flush completes in a new file")
        #expect(engine.metrics.storeReplacements == 1)
        try engine.shutdown()

        let reopened = try Engine.open(config: fixture.config, components: testComponents + [Annotation.self],
                                       logger: quietLogger, options: fixture.options)
        defer { try? reopened.shutdown() }
        #expect(reopened.recovery.setAsideCorruptFile == nil)
        for section in BatchSection.allCases { try check(section, reopened, filled, operationsBefore: 40) }
        #expect(try reopened.store.verify().isEmpty)
    }
}

import Foundation
import Logging
import StrataCanvas
import Testing
@testable import Strata

/// The page budget of a canvas's critical commit, by B-tree (``PageWrites``; the counting
/// VFS's record of the frames is tested in `CountingVFSTests`).
@Suite struct PageWritesTests {
    /// The pages one critical commit of a canvas edit writes, by B-tree, on average over
    /// 24 edits: a regression guard for the cost of every kind of data, with the budget
    /// in one place (docs/storage.md, "Pages per commit"). Each commit spawns a shape (its
    /// entity row and id, its components and their stamps in the segment log), moves
    /// another and despawns an old one (both in `pending_entities`: their rows wait for
    /// compaction), as the canvas does about every second; the canvas's types
    /// replicate, so the engine logs each of those changes as an operation (four a
    /// commit), and the despawn is a tombstone in the despawns' partial index. A peer's
    /// operation arrives every fourth; the vector clock goes along every fifth operation.
    /// A table or index that grows past a page splits, and SQLite then rewrites the page,
    /// its neighbours and their parent: the averages include those.
    static let budget: [String: Double] = [
        // Measured 2026-11-26 (512-byte pages, schema 17): segments 1.50, this replica's
        // operations 2.54 (keyed by their sequence: no index; Strata's kinds as codes), the
        // peer's 0.25 and their (node, seq) index 0.25, the waiting spawns and despawns 1.17
        // (the new shape's row at the right edge, the old one's number), the despawns' index
        // 1.0, vector_clock 0.50, page 1 0.79 and the pointer map 1.13: 9.1 pages of 512
        // bytes, 4.7 KiB. With 1 KiB pages and schema 16 it was 7.0 pages, 7.2 KiB; when a
        // spawn wrote its row and id at once, 9.6 (entities 1.04, their ids 1.54); when a
        // despawn deleted its rows at once too, entities 2.04, their ids 2.63, components 1.83.
        "segments": 1.7,                          // the log's last leaf
        "local_operations": 2.8,                  // the last leaf, and a new one when it fills
        "local_operations_despawns": 1.1,         // a despawn's tombstone: the index's last leaf
        "received_operations": 0.4,               // a peer's operation, every fourth commit
        "sqlite_autoindex_received_operations_1": 0.4,
        "pending_entities": 1.3,                  // its last leaf (a spawn), now and then another (a despawn)
        "vector_clock": 0.6,
        PageWrites.Tree.header: 0.9,              // page 1: the file's size in pages, the free list
        PageWrites.Tree.pointerMap: 1.3,          // auto_vacuum's map of the pages allocated
    ]
    /// The most pages one of those commits writes in all (a leaf split rewrites its
    /// neighbours and their parent).
    static let budgetLargestCommit = 20

    @Test func aCanvasEditsCriticalCommitStaysInsideItsPageBudget() throws {
        let fixture = EngineFixture()
        var config = fixture.config
        config.metrics.countFsyncs = true
        let engine = try Engine.open(config: config, components: canvasComponents, logger: quietLogger, options: fixture.options)
        let vfs = try #require(engine.countingVFS)
        let world = engine.world
        // A saved canvas of 500 shapes, folded into base rows.
        var shapes = (0 ..< 500).map { i in world.spawn(ShapeStyle(kind: 1, color: UInt32(i)), ShapeTransform(x: Float(i), y: 0)) }
        engine.flushNow(reason: .explicitSave)   // their replicated values logged
        #expect(engine.compactNow())
        engine.flushNow(reason: .explicitSave)
        let peer = NodeID()
        var rng = SplitMix64(seed: 5)

        vfs.recordPageWrites(true)
        var frames: [String: Int] = [:]
        var largest = 0
        let edits = 24
        for edit in 1 ... edits {
            // The canvas's types replicate: the engine logs these as operations itself.
            shapes.append(world.spawn(ShapeStyle(kind: 2, color: 0xFF), ShapeTransform(x: 1, y: 1)))
            world.mutate(ShapeTransform.self, of: shapes[Int.random(in: 0 ..< shapes.count, using: &rng)]) { $0.x += 3 }
            world.despawn(shapes.remove(at: Int.random(in: 0 ..< 400, using: &rng)))
            if edit % 4 == 0 {
                engine.receiveOperation(LoggedOperation(node: peer, seq: Int64(edit / 4), timestamp: HybridTimestamp(milliseconds: 1),
                                                        kind: "shape.restyle", payload: [1, 2, 3]))
            }
            fixture.clock.advance(by: config.persistence.criticalFlushDelay)
            engine.endTick()
            #expect(engine.waitForWriter())
            var pages = PageWrites()
            pages.take(from: vfs)
            #expect(pages.commits == 1, "one commit per critical flush")
            for tree in try pages.byTree(databasePath: fixture.directory.databasePath) { frames[tree.name, default: 0] += tree.frames }
            largest = max(largest, pages.frames)
        }
        let measured = frames.mapValues { Double($0) / Double(edits) }
        for (tree, average) in measured.sorted(by: { $0.key < $1.key }) {
            let allowed = Self.budget[tree] ?? 0
            #expect(average <= allowed, "\(tree): \(average) pages per commit, budget \(allowed); per commit: \(measured)")
        }
        #expect(largest <= Self.budgetLargestCommit, "\(largest) pages in one commit; per commit: \(measured)")
        try engine.shutdown()
    }
}

import Foundation
import GRDB
import GRDBSQLite
import Testing
@testable import Strata
import StrataTesting

/// A component type the engines of these tests do not register (a plug-in's data, say):
/// its rows must survive a replacement they cannot write themselves.
struct Annotation: Component, Equatable {
    static let typeName = "test.annotation"
    static let tier = Tier.critical
    var note: String

    init(_ note: String) { self.note = note }
    func encode(to payload: inout PayloadWriter) { payload.write(note) }
    init(from payload: inout PayloadReader, version: Int) throws { note = try payload.read() }
}

/// Corruption found while running (`Engine+StoreReplacement.swift`): the damaged file is
/// set aside, a new one is written from the world in memory and what still reads of the
/// rest, and the engine goes on. Real files, real damage (a page overwritten on disk).
@Suite struct StoreReplacementTests {
    /// A document of `count` entities (a Title and a Position each, and an Annotation
    /// every tenth, written by an engine that registers it), with settings and operations.
    func makeDocument(_ fixture: EngineFixture, count: Int = 3000) throws -> [EntityID] {
        let engine = try Engine.open(config: fixture.config, components: testComponents + [Annotation.self],
                                     logger: quietLogger, options: fixture.options)
        var ids: [EntityID] = []
        for i in 0 ..< count {
            let entity = engine.world.spawn(Title("title \(i)"), Position(x: Float(i), y: 0))
            if i % 10 == 0 { engine.world.insert(Annotation("note \(i)"), for: entity) }
            ids.append(engine.world.id(of: entity)!)
        }
        engine.world.setSetting(.string("dark"), for: "theme")
        for i in 0 ..< 40 { engine.appendOperation(kind: "shape.create", payload: [UInt8(i)]) }
        try engine.shutdown()
        return ids
    }

    /// What a user would compare: every live entity's title and position, and the settings.
    func contents(_ world: World) -> [EntityID: String] {
        var result: [EntityID: String] = [:]
        for entity in world.entities {
            let title = world.get(Title.self, for: entity).map { "\($0.text)#\($0.revision)" } ?? "-"
            let position = world.get(Position.self, for: entity).map { "\($0.x),\($0.y)" } ?? "-"
            result[world.id(of: entity)!] = "\(title) @ \(position)"
        }
        return result
    }

    func setAsideFiles(_ fixture: EngineFixture) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path).filter { $0.contains(".corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
    }

    /// Changes that reach the damaged page: despawning every seventh entity deletes rows
    /// from every leaf of `entities`. And more of everything else.
    func change(_ engine: Engine, _ ids: [EntityID]) {
        let world = engine.world
        for (i, id) in ids.enumerated() {
            guard let entity = world.entity(for: id) else { continue }
            if i % 7 == 0 {
                world.despawn(entity)
            } else if i % 5 == 0 {
                world.insert(Title("edited \(i)", revision: 1), for: entity)
                world.insert(Position(x: -Float(i), y: 1), for: entity)
            }
        }
        for i in 0 ..< 25 { world.spawn(Title("new \(i)"), Position(x: 0, y: Float(i))) }
        world.setSetting(.string("light"), for: "theme")
        world.setSetting(.integer(7), for: "zoom")
        for i in 0 ..< 10 { engine.appendOperation(kind: "shape.move", payload: [UInt8(i)]) }
    }

    /// A fixture whose despawns reach the damaged page of `entities`: with `[history]`, a
    /// despawn deletes its rows at once (without it, they wait for compaction).
    func despawningAtOnce(_ name: String = #function) -> EngineFixture {
        var fixture = EngineFixture(name)
        fixture.config.history.keep = .seconds(3600)
        return fixture
    }

    @Test func aCommitThatFindsTheFileCorruptReplacesItAndLosesNothingInMemory() throws {
        let fixture = despawningAtOnce()
        let ids = try makeDocument(fixture)
        let engine = try fixture.open()
        #expect(engine.recovery.loaded.unknownTypeRows == 300, "Annotation is not registered here")
        _ = try damageLeafPage(of: "entities", skip: 2, in: fixture.directory.databasePath)

        change(engine, ids)
        let expected = contents(engine.world)
        #expect(engine.flushNow(), "the commit fails on the damaged page; the flush completes in a new file")

        let metrics = engine.metrics
        #expect(metrics.storeReplacements == 1)
        let report = try #require(metrics.lastStoreReplacement)
        #expect(report.contains("malformed") || report.contains("corrupt"), "\(report)")
        #expect(try setAsideFiles(fixture).count == 1, "the damaged file is kept, aside")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".replacing"))
        #expect(try engine.store.verify().isEmpty)

        // The engine goes on, with a writer on the new file.
        let survivor = try #require(engine.world.entities.first)
        engine.world.insert(Title("after", revision: 2), for: survivor)
        #expect(engine.flushNow())
        let final = contents(engine.world)
        #expect(final.count == expected.count)
        try engine.shutdown()

        let reopened = try Engine.open(config: fixture.config, components: testComponents + [Annotation.self],
                                       logger: quietLogger, options: fixture.options)
        defer { try? reopened.shutdown() }
        #expect(!reopened.recovery.crashed, "the new file was shut down cleanly")
        #expect(reopened.recovery.setAsideCorruptFile == nil)
        #expect(contents(reopened.world) == final, "every entity, title and position the world held")
        #expect(reopened.world.setting("theme") == .string("light"))
        #expect(reopened.world.setting("zoom") == .integer(7))
        #expect(reopened.recovery.operations.operations == 50, "the 40 operations of the old file and the 10 waiting")
        #expect(reopened.recovery.operations.gaps == 0)
        #expect(reopened.recovery.session.cleanShutdownCount == 2, "counted on from the old file (1) and this one's")
        // The unregistered type's rows came over for the entities still alive.
        let annotated = reopened.world.entities.filter { reopened.world.get(Annotation.self, for: $0) != nil }
        let aliveAnnotated = ids.enumerated().filter { $0.offset % 10 == 0 && $0.offset % 7 != 0 }.count
        #expect(annotated.count == aliveAnnotated)
        #expect(try reopened.store.verify().isEmpty)
    }

    @Test func damageTheIdleCheckFindsIsReplacedWhileRunning() throws {
        // A damaged page of the jobs' (entity, kind) index: no commit reads it, the idle
        // integrity check does. The file is replaced at the next flush, not the next open.
        var fixture = EngineFixture()
        try writeTitlesAndOperations(fixture, count: 3000)
        fixture.config.persistence.idleAfter = .seconds(60)
        let engine = try fixture.open()
        try damageLeafPage(of: quietIndex, skip: 2, in: fixture.directory.databasePath)

        engine.noteInput()   // idle detection starts with the host's first input
        fixture.clock.advance(by: .seconds(61))
        engine.endTick()
        #expect(eventually(timeout: .seconds(120)) { engine.metrics.integrityCheck != nil })
        #expect(engine.metrics.integrityCheck != "ok")
        engine.world.spawn(Title("one more"))
        #expect(engine.flushNow())
        #expect(engine.metrics.storeReplacements == 1)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".verify"), "the new file needs no check")
        try engine.shutdown()

        let next = try fixture.open()
        defer { try? next.shutdown() }
        #expect(next.recovery.setAsideCorruptFile == nil, "nothing left for the next open to do")
        #expect(next.world.count(of: Title.self) == 3001)
        #expect(next.recovery.operations.operations == 3000, "the log's table reads whole: only its index was damaged")
        #expect(try next.store.verify().isEmpty)
    }

    /// A document through the fault VFS, a damaged page, changes, and every write failing:
    /// the commit finds the damage and the replacement cannot write its new file.
    func replacementThatCannotWrite(_ name: String = #function) throws
        -> (EngineFixture, Engine, FaultVFS, [EntityID], lost: Int) {
        var fixture = despawningAtOnce(name)
        let vfs = try FaultVFS.register(name: "replace-\(UUID().uuidString)")
        fixture.options.vfs = vfs.name
        let ids = try makeDocument(fixture)
        let engine = try fixture.open()
        let lost = try damageLeafPage(of: "entities", skip: 2, in: fixture.directory.databasePath)
        change(engine, ids)
        vfs.arm(.write, nth: 1, code: FaultVFS.ioError(for: .write), persistent: true)
        #expect(!engine.flushNow(timeout: .seconds(2)))
        return (fixture, engine, vfs, ids, lost)
    }

    @Test func aReplacementThatFailsKeepsEverythingAndIsRetried() throws {
        // The new file cannot be written (every write fails): the replacement fails, the
        // world and the waiting batches stay in memory, and the next flush after the
        // backoff tries again, once the disk works.
        let (fixture, engine, vfs, _, _) = try replacementThatCannotWrite()
        let expected = contents(engine.world)
        #expect(engine.metrics.storeReplacements == 0)
        #expect(engine.metrics.lastWriteError?.contains("replacing the corrupt file") == true, "\(engine.metrics.lastWriteError ?? "")")
        #expect(FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".repair"), "names the set-aside file until done")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.databasePath), "the name holds no unfinished copy")

        vfs.disarm()
        engine.world.setSetting(.boolean(true), for: "late")
        fixture.clock.advance(by: .seconds(1))
        #expect(engine.flushNow())
        #expect(engine.metrics.storeReplacements == 1)
        #expect(try setAsideFiles(fixture).count == 1, "the unfinished copy is not kept: it was made from the set-aside file and memory")
        try engine.shutdown()

        let reopened = try fixture.open()
        defer { try? reopened.shutdown() }
        #expect(contents(reopened.world) == expected)
        #expect(reopened.world.setting("late") == .boolean(true))
        #expect(reopened.recovery.operations.operations == 50)
    }

    @Test func aReplacementCutShortIsFinishedByTheNextOpen() throws {
        // The process dies while the new file is being made: the name holds nothing (the new
        // file is built under PATH.salvage), and PATH.repair names the set-aside file. The
        // next open finishes the repair from that one (the world in memory died with it).
        let (fixture, engine, vfs, ids, lost) = try replacementThatCannotWrite()
        let marker = fixture.directory.databasePath + ".repair"
        let original = try JSONDecoder().decode(Repair.Marker.self, from: Data(contentsOf: URL(fileURLWithPath: marker))).original
        engine.abandon()
        vfs.disarm()

        let reopened = try fixture.open()
        defer { try? reopened.shutdown() }
        #expect(reopened.recovery.setAsideCorruptFile == original)
        #expect(reopened.recovery.repairResumed, "\(reopened.recovery)")
        #expect(reopened.world.entityCount == ids.count - lost, "the set-aside file, less its damaged page")
        #expect(reopened.world.setting("theme") == .string("dark"))
        #expect(!FileManager.default.fileExists(atPath: marker))
        #expect(try reopened.store.verify().isEmpty)
    }

    /// `PATH.replacing`, as builds before the replacement was a repair left it: PATH an
    /// unfinished copy, the marker naming the set-aside file. The open sets the copy aside
    /// too and repairs from the named one.
    @Test func aReplacingMarkerOfAnOlderBuildIsStillFinished() throws {
        let fixture = EngineFixture()
        let ids = try makeDocument(fixture)
        let path = fixture.directory.databasePath
        let original = path + ".corrupt-1"
        try FileManager.default.moveItem(atPath: path, toPath: original)
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: path))
        try Data(original.utf8).write(to: URL(fileURLWithPath: path + ".replacing"))
        let reopened = try fixture.open()
        defer { try? reopened.shutdown() }
        #expect(reopened.recovery.setAsideCorruptFile == original)
        #expect(reopened.world.entityCount == ids.count)
        #expect(!FileManager.default.fileExists(atPath: path + ".replacing") && !FileManager.default.fileExists(atPath: path + ".repair"))
        #expect(try setAsideFiles(fixture).count == 2, "the original and the unfinished copy, both kept")
    }
}

/// A file found corrupt while the host is still starting (before its first tick): the
/// calls that wait on the writer there do not stall until the tick loop replaces it.
@Suite struct StartupCorruptionTests {
    @Test func aDamagedPageFoundAtTheStartIsReplacedThereAndThen() throws {
        // A canvas with thumbnails (asset rows); its `assets` page overwritten on disk. The
        // sim's start reads the assets through the writer (the reconciliation, the
        // thumbnails' catch-up), which finds the damage: the file is set aside and replaced
        // there and then, and the sim runs its second and exits.
        let directory = TestDirectory()
        let path = directory.databasePath
        let first = try ChildProcess.strata(["sim", "--db", path, "--duration", "5", "--entities", "100", "--activity", "5",
                                             "--log-level", "critical"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try DatabaseQueue(path: path).read { try Int.fetchOne($0, sql: "SELECT count(*) FROM assets") ?? 0 } > 0)
        _ = try damageLeafPage(of: "assets", skip: 0, in: path)

        let sim = Process()
        sim.executableURL = URL(fileURLWithPath: try strataExecutable())
        sim.arguments = ["sim", "--db", path, "--duration", "1", "--entities", "100", "--log-level", "critical"]
        let output = Pipe()
        sim.standardOutput = output
        sim.standardError = FileHandle.nullDevice
        try sim.run()
        // A stall is the failure (it was two waits of 120 s each), not a slow run.
        guard eventually(timeout: .seconds(60), { !sim.isRunning }) else {
            kill(sim.processIdentifier, SIGKILL)
            Issue.record("the sim is still starting after 60 s")
            return
        }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(sim.terminationStatus == 0, "\(text)")
        #expect(text.contains("shut down cleanly"), "\(text)")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(files.contains { $0.contains(".corrupt-") }, "set aside: \(files)")
    }

    @Test(.timeLimit(.minutes(2)))   // without the stop, the wait would last ten minutes
    func aWaitOnTheWriterEndsWhenTheHostStops() throws {
        // No writer takes the request (as when it has stopped): the wait ends at the host's
        // stop, not at its two-minute timeout.
        let buffer = WriteBuffer()
        buffer.setWaitHooks(stop: { true }, corruption: {})
        let lane = WriterLane(buffer: buffer)
        #expect(throws: WriterRequestError.interrupted) {
            _ = try lane.perform(.normal, timeout: .seconds(600)) { _ in 1 }
        }
    }

}

import Foundation
import GRDB
import Testing
@testable import Strata

/// The cut-short sweep: a tool killed (SIGKILL and SIGTERM, alternately) at evenly spaced
/// moments of its run, then a start. Nothing the original held is lost, and nothing is left
/// beside the document but the documented side files. (The repair's own sweep is in
/// `RepairTests`.)
@Suite struct CutShortTests {
    /// Moments per sweep (`STRATA_CUTS` for more).
    static let moments = Int(ProcessInfo.processInfo.environment["STRATA_CUTS"] ?? "") ?? 10

    /// Runs `strata arguments` once whole (the span), then `moments` times, each killed at
    /// its moment of that span; `after` checks each cut.
    func sweep(_ arguments: (Int) throws -> [String], prepare: (Int) throws -> Void = { _ in },
               after: (Int, Int32) throws -> Void) throws {
        try prepare(-1)
        let started = ContinuousClock.now
        let whole = try ChildProcess.strata(try arguments(-1))
        #expect(whole.status == 0, "\(whole.stderr)")
        let span = ContinuousClock.now - started
        for cut in 0 ..< Self.moments {
            try prepare(cut)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try strataExecutable())
            process.arguments = try arguments(cut)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: (span * Double(cut) / Double(Self.moments)).seconds)
            let signal = cut % 2 == 0 ? SIGKILL : SIGTERM
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
            try after(cut, signal)
        }
    }

    func document(_ fixture: EngineFixture, titles: Int) throws {
        let engine = try fixture.open()
        for i in 0 ..< titles { engine.world.spawn(Title("title \(i)")) }
        engine.world.setSetting(.string("dark"), for: "theme")
        try engine.shutdown()
    }

    func titles(at path: String) throws -> Int {
        var config = StrataConfig()
        config.database.path = path
        let engine = try Engine.open(config: config, components: [Title.self], logger: quietLogger)
        defer { try? engine.shutdown() }
        #expect(engine.recovery.setAsideCorruptFile == nil, "\(path): \(engine.recovery.description)")
        return engine.world.count(of: Title.self)
    }

    /// `strata backup`: the destination holds a whole, verified backup or nothing; the source
    /// is as it was; a temporary copy left by the kill goes with the next backup.
    @Test func aBackupCutAtAnyMomentLeavesAWholeBackupOrNone() throws {
        let fixture = EngineFixture()
        try document(fixture, titles: 3000)
        let source = fixture.directory.databasePath
        let before = try Data(contentsOf: URL(fileURLWithPath: source))
        let folder = TestDirectory()
        func destination(_ cut: Int) -> String { folder.url.appendingPathComponent("backup-\(cut).db").path }
        var whole = 0
        try sweep({ ["backup", source, destination($0)] }, after: { cut, _ throws in
            let path = destination(cut)
            if FileManager.default.fileExists(atPath: path) {
                whole += 1
                let queue = try DatabaseQueue(path: path)
                #expect(try queue.read { try String.fetchAll($0, sql: "PRAGMA integrity_check") } == ["ok"], "cut \(cut)")
                #expect(try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM entities") } == 3000, "cut \(cut): whole")
                try queue.close()
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: source)) == before, "cut \(cut): the source is as it was")
        })
        _ = try Backup.copy(from: source, to: destination(99))
        let partials = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains(".partial-") }
        #expect(partials.isEmpty, "the next backup removed the copies the kills left: \(partials)")
        #expect(try titles(at: source) == 3000)
        _ = whole
    }

    /// `strata restore`: the destination holds a whole document or nothing (a kill before the
    /// rename leaves only its lock file); the backup is as it was.
    @Test func aRestoreCutAtAnyMomentLeavesAWholeDocumentOrNone() throws {
        let fixture = EngineFixture()
        try document(fixture, titles: 3000)
        let backup = fixture.directory.url.appendingPathComponent("backup.db").path
        _ = try Backup.copy(from: fixture.directory.databasePath, to: backup)
        let before = try Data(contentsOf: URL(fileURLWithPath: backup))
        let folder = TestDirectory()
        func destination(_ cut: Int) -> String { folder.url.appendingPathComponent("restored-\(cut).db").path }
        try sweep({ ["restore", backup, destination($0)] }, after: { cut, _ throws in
            let path = destination(cut)
            if FileManager.default.fileExists(atPath: path) {
                #expect(try titles(at: path) == 3000, "cut \(cut): a document under the name is whole")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: backup)) == before, "cut \(cut): the backup is as it was")
        })
    }

    /// `strata maintain` (compaction, retention, vacuum steps): every title is there after
    /// the kill, and the start finds a sound file.
    @Test func maintenanceCutAtAnyMomentLosesNothing() throws {
        let fixture = EngineFixture()
        let original = fixture.directory.url.appendingPathComponent("original.db").path
        do {
            var config = fixture.config
            config.database.path = original
            let engine = try Engine.open(config: config, components: testComponents, logger: quietLogger, options: fixture.options)
            let entities = (0 ..< 3000).map { engine.world.spawn(Title("title \($0)")) }
            #expect(engine.flushNow())
            for entity in entities.prefix(1000) { engine.world.despawn(entity) }   // work for the compaction
            try engine.shutdown()
        }
        let trial = fixture.directory.url.appendingPathComponent("trial.db").path
        let prepare = { (_: Int) throws in
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: trial + suffix) }
            try FileManager.default.copyItem(atPath: original, toPath: trial)
        }
        try sweep({ _ in ["maintain", trial] }, prepare: prepare, after: { cut, _ throws in
            #expect(try titles(at: trial) == 2000, "cut \(cut)")
        })
    }

    /// `strata sim --documents` switching every 0.2 s: wherever the kill falls (a switch's
    /// flush, the next document's open, the shutdown of the last), every document opens
    /// sound, without a repair.
    @Test func aDocumentSwitchCutAtAnyMomentLeavesEveryDocumentSound() throws {
        let folder = TestDirectory()
        let names = ["a.db", "b.db", "c.db"].map { folder.url.appendingPathComponent($0).path }
        try sweep({ _ in ["sim", "--documents", names.joined(separator: ","), "--switch-every", "0.2", "--duration", "1.2",
                          "--entities", "20", "--log-level", "error"] }, after: { cut, _ throws in
            for name in names where FileManager.default.fileExists(atPath: name) {
                var config = StrataConfig()
                config.database.path = name
                let engine = try Engine.open(config: config, logger: quietLogger)
                #expect(engine.recovery.setAsideCorruptFile == nil, "cut \(cut): \(name): \(engine.recovery.description)")
                #expect(engine.recovery.session.integrityOK, "cut \(cut): \(name)")
                try engine.shutdown()
            }
        })
    }
}

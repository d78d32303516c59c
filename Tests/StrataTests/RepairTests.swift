import Foundation
import GRDB
import Testing
@testable import Strata

/// A repair is a transaction: the salvage is built beside the document and takes its name
/// whole; a cut at any moment is finished by the next open (`Repair.swift`).
@Suite struct RepairTests {
    /// A document of 3000 titles with one damaged leaf of `entities`: what a clean repair
    /// keeps is every other entity.
    func damagedDocument(_ fixture: EngineFixture) throws -> (cells: Int, survivors: Int) {
        let engine = try fixture.open()
        for i in 0 ..< 3000 { engine.world.spawn(Title("title \(i)")) }
        engine.world.setSetting(.string("dark"), for: "theme")
        try engine.shutdown()
        let cells = try damageLeafPage(of: "entities", skip: 2, in: fixture.directory.databasePath)
        return (cells, 3000 - cells)
    }

    func leftovers(_ path: String) -> [String] {
        let location = StoreLocation(path: path)
        return [location.repairMarkerPath, location.salvagePath, location.salvagePath + "-wal", location.salvagePath + "-shm",
                location.replacingMarkerPath].filter { FileManager.default.fileExists(atPath: $0) }
    }

    /// With no check at the start, the reload meets a damaged leaf of the base rows itself
    /// (on its reading thread): the file is corrupt (set aside, salvaged), not a world
    /// loaded up to that leaf and taken for whole.
    @Test func aDamagedLeafMetByTheReloadIsACorruptFileNotAShorterWorld() throws {
        var fixture = EngineFixture()
        fixture.config.maintenance.startCheckAge = .zero
        let engine = try fixture.open()
        // A bulk first save: the values are base rows in `components`.
        let count = WriteBatch.bulkRows / 2 + 500
        for i in 0 ..< count { engine.world.spawn(Position(x: Float(i), y: 0), Title("title \(i)")) }
        try engine.shutdown()
        let cells = try damageLeafPage(of: "components", skip: 20, in: fixture.directory.databasePath)
        #expect(cells > 0)
        let reopened = try fixture.open()
        #expect(reopened.recovery.setAsideCorruptFile != nil, "\(reopened.recovery.description)")
        #expect(reopened.world.count(of: Position.self) + reopened.world.count(of: Title.self) == 2 * count - cells,
                "the salvage keeps every row but the damaged leaf's")
        try reopened.shutdown()
    }

    @Test func aSalvageIsBuiltBesideTheDocumentAndRecordedInIt() throws {
        let fixture = EngineFixture()
        let (_, survivors) = try damagedDocument(fixture)
        let path = fixture.directory.databasePath
        let engine = try fixture.open()
        let setAside = try #require(engine.recovery.setAsideCorruptFile)
        #expect(engine.world.entityCount == survivors)
        #expect(engine.world.setting("theme") == .string("dark"))
        #expect(!engine.recovery.repairResumed)
        try engine.shutdown()
        #expect(leftovers(path).isEmpty, "\(leftovers(path))")
        #expect(!FileManager.default.fileExists(atPath: path + ".salvage.lock"), "the salvage is built under the document's own lock")
        let report = try DoctorReport.examine(path: path)
        let repair = try #require(report.repairs.first)
        #expect(report.repairs.count == 1)
        #expect(repair.setAside == setAside && repair.report.contains("salvaged"), "\(repair)")
        #expect(report.findings.contains { $0.subject == "repair" && $0.detail.contains(setAside) })
        let doctor = try ChildProcess.strata(["doctor", path])
        #expect(doctor.stdout.contains(setAside), "strata doctor names the set-aside original: \(doctor.stdout)")
    }

    /// Cut before the original moved: the name holds the untouched original; the marker
    /// goes and the open repairs it as if for the first time.
    @Test func aMarkerWhoseOriginalNeverMovedIsDroppedAndTheRepairStartsOver() throws {
        let fixture = EngineFixture()
        let (_, survivors) = try damagedDocument(fixture)
        let location = StoreLocation(path: fixture.directory.databasePath)
        try Repair.adopt(location, original: location.path + ".corrupt-1", cause: "test")
        let engine = try fixture.open()
        #expect(engine.world.entityCount == survivors)
        let setAside = try #require(engine.recovery.setAsideCorruptFile)
        #expect(setAside != location.path + ".corrupt-1", "a new repair, to a name free now")
        #expect(!engine.recovery.repairResumed)
        try engine.shutdown()
        #expect(leftovers(location.path).isEmpty)
    }

    /// Cut after the original moved and before the salvage took the name: no file under the
    /// name, a half-built `PATH.salvage`. The next open builds it again from the original.
    @Test func aSalvageCutShortIsBuiltAgainFromTheOriginal() throws {
        let fixture = EngineFixture()
        let (_, survivors) = try damagedDocument(fixture)
        let location = StoreLocation(path: fixture.directory.databasePath)
        let original = location.path + ".corrupt-7"
        try Repair.adopt(location, original: original, cause: "malformed (test)")
        try FileManager.default.moveItem(atPath: location.path, toPath: original)
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: location.salvagePath))
        let before = try Data(contentsOf: URL(fileURLWithPath: original))

        #expect(try ChildProcess.strata(["maintain", location.path]).status != 0, "without --repair, nothing is done")
        let run = try ChildProcess.strata(["maintain", "--repair", location.path])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("cut short: finished now"), "\(run.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: original)) == before, "the original is never written")
        #expect(leftovers(location.path).isEmpty, "\(leftovers(location.path))")
        let engine = try fixture.open()
        #expect(engine.world.entityCount == survivors)
        #expect(engine.recovery.setAsideCorruptFile == nil, "repaired already: an ordinary start")
        try engine.shutdown()
    }

    /// Cut after the salvage took the name, before the marker went: the file is complete.
    @Test func aSalvageInPlaceIsKeptAndOnlyItsMarkerGoes() throws {
        let fixture = EngineFixture()
        let (_, survivors) = try damagedDocument(fixture)
        let location = StoreLocation(path: fixture.directory.databasePath)
        let setAside: String
        do {
            let engine = try fixture.open()
            setAside = try #require(engine.recovery.setAsideCorruptFile)
            engine.world.spawn(Title("after the repair"))
            try engine.shutdown()
        }
        try Repair.adopt(location, original: setAside, cause: "test")
        let engine = try fixture.open()
        #expect(engine.recovery.repairResumed)
        #expect(engine.recovery.setAsideCorruptFile == setAside)
        #expect(engine.recovery.salvage == nil)
        #expect(engine.world.entityCount == survivors + 1, "the file in place is kept, with what came after the repair")
        try engine.shutdown()
        #expect(leftovers(location.path).isEmpty)
    }

    /// The cut-short sweep: `strata maintain --repair` killed (SIGKILL, SIGTERM) at evenly
    /// spaced moments of its run. Right after each kill, the name holds the untouched
    /// original or the whole salvage, never a part of one; the next start ends with every
    /// entity a whole repair keeps, and nothing left beside the document but the original.
    @Test func aRepairKilledAtAnyMomentEndsWhole() throws {
        let fixture = EngineFixture()
        let (_, survivors) = try damagedDocument(fixture)
        let damaged = try Data(contentsOf: URL(fileURLWithPath: fixture.directory.databasePath))
        // How long a whole run takes here (the sweep's span; no assertion on it).
        let whole = TestDirectory()
        try damaged.write(to: URL(fileURLWithPath: whole.databasePath))
        let started = ContinuousClock.now
        #expect(try ChildProcess.strata(["maintain", "--repair", whole.databasePath]).status == 0)
        let span = ContinuousClock.now - started
        let moments = Int(ProcessInfo.processInfo.environment["STRATA_REPAIR_CUTS"] ?? "") ?? 16
        var outcomes: [String: Int] = [:]
        for cut in 0 ..< moments {
            let directory = TestDirectory()
            let path = directory.databasePath
            try damaged.write(to: URL(fileURLWithPath: path))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try strataExecutable())
            process.arguments = ["maintain", "--repair", path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: (span * Double(cut) / Double(moments)).seconds)
            kill(process.processIdentifier, cut % 2 == 0 ? SIGKILL : SIGTERM)
            process.waitUntilExit()

            // What the name holds now: the original as it was, or a whole salvage.
            var state = "nothing under the name"
            if let now = FileManager.default.contents(atPath: path) {
                if now == damaged {
                    state = "the original"
                } else {
                    var readOnly = Configuration()
                    readOnly.readonly = true
                    let queue = try DatabaseQueue(path: path, configuration: readOnly)
                    let repairs = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM repairs") ?? 0 }
                    if repairs == 0 {
                        // The original, with the session mark of the open that then found its
                        // damage (an ordinary open marks the session before it reads the world):
                        // still damaged, the same file.
                        let check = (try? queue.inDatabase { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }) ?? ["malformed"]
                        #expect(check != ["ok"], "cut \(cut): a file under the name that is neither the original nor whole")
                        state = "the original, its session marked"
                    } else {
                        let entities = try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM entities") ?? 0 }
                        #expect(repairs == 1 && entities == survivors, "cut \(cut): a file under the name that is neither the original nor whole")
                        state = "the whole salvage"
                    }
                    try queue.close()
                }
            }
            outcomes[state, default: 0] += 1
            var config = fixture.config
            config.database.path = path
            let engine = try Engine.open(config: config, components: [Title.self], logger: quietLogger)
            #expect(engine.world.entityCount == survivors, "cut \(cut) (\(state)): \(engine.recovery.description)")
            #expect(engine.world.setting("theme") == .string("dark"))
            try engine.shutdown()
            #expect(leftovers(path).isEmpty, "cut \(cut): \(leftovers(path))")
            let originals = try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.contains(".corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
            #expect(originals.count == 1, "cut \(cut): one original set aside, \(originals)")
        }
        #expect(outcomes.values.reduce(0, +) == moments, "\(outcomes)")
        if ProcessInfo.processInfo.environment["STRATA_REPAIR_VERBOSE"] != nil { print("repair cuts over \(span): \(outcomes)") }
    }
}

import Foundation
import GRDB
import Testing
@testable import Strata

/// The document's files: written atomically and durably, registered, removed with their
/// entity, and reconciled with the folder (real files, real writer).
@Suite struct AssetStoreTests {
    func files(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    func spawn(_ engine: Engine, _ count: Int) -> [EntityID] {
        let ids = (0 ..< count).map { engine.world.id(of: engine.world.spawn(Title("t\($0)")))! }
        #expect(engine.flushNow())
        return ids
    }

    @Test func aWriteIsDurableRegisteredAndReadBack() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let id = spawn(engine, 1)[0]
        let bytes = [UInt8]((0 ..< 5000).map { UInt8($0 & 0xFF) })
        let asset = try engine.assets.write(bytes, for: id, fileExtension: "png")
        #expect(asset.entity == id && asset.size == 5000 && asset.state == .present && asset.name.hasSuffix(".png"))
        #expect(asset.checksum == CRC32C.checksum(bytes))
        #expect(try engine.assets.read(asset) == bytes)
        #expect(files(fixture.directory.databasePath + ".assets") == [asset.name], "no temporary file left")
        #expect(try engine.assets.assets(for: id) == [asset])
        // Writing the same name again replaces the file and the row.
        let again = try engine.assets.write([1, 2, 3], for: id, name: asset.name)
        #expect(again.id == asset.id && again.size == 3)
        #expect(throws: JobError.self) { try engine.assets.write([1], for: EntityID(), timeout: .milliseconds(100)) }
        #expect(files(fixture.directory.databasePath + ".assets") == [asset.name], "the refused write's file is removed")
    }

    @Test func aDespawnedEntitysFilesAreRemoved() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let ids = spawn(engine, 2)
        let gone = try engine.assets.write([1, 2, 3], for: ids[0])
        let kept = try engine.assets.write([4, 5, 6], for: ids[1])
        engine.world.despawn(engine.world.entity(for: ids[0])!)
        #expect(engine.flushNow())
        #expect(eventually { self.files(fixture.directory.databasePath + ".assets") == [kept.name] })
        #expect(try engine.assets.assets().map(\.name) == [kept.name])
        // The files go first, then their names in the trash (AssetStore.emptyTrash): wait for both.
        #expect(eventually { (try? engine.jobs.perform(.normal) { db in try AssetRows.trash(db) })?.isEmpty == true },
                "\(gone.name): the trash is emptied")
    }

    @Test func theReconciliationPutsFolderAndRowsBackInStep() throws {
        var fixture = EngineFixture()
        fixture.config.assets.minFileBytes = 10
        let folder = fixture.directory.databasePath + ".assets"
        var names: [String] = []
        do {
            let engine = try fixture.open()
            let id = spawn(engine, 1)[0]
            names.append(try engine.assets.write([UInt8](repeating: 1, count: 100), for: id).name)   // its file will vanish
            names.append(try engine.assets.write([UInt8](repeating: 2, count: 100), for: id).name)   // stays
            names.append(try engine.assets.write([UInt8](repeating: 3, count: 5), for: id).name)     // too small
            try engine.shutdown()
        }
        let fm = FileManager.default
        try fm.removeItem(atPath: "\(folder)/\(names[0])")
        try Data(repeating: 7, count: 64).write(to: URL(fileURLWithPath: "\(folder)/stray.bin"))
        try Data(repeating: 8, count: 3).write(to: URL(fileURLWithPath: "\(folder)/tiny.bin"))
        try Data(repeating: 9, count: 64).write(to: URL(fileURLWithPath: "\(folder)/.tmp-interrupted"))
        try fm.createDirectory(atPath: "\(folder)/inbox", withIntermediateDirectories: true)
        try Data(repeating: 10, count: 64).write(to: URL(fileURLWithPath: "\(folder)/inbox/shared recording.m4a"))

        let engine = try fixture.open()   // reconciles at open
        defer { try? engine.shutdown() }
        let report = try #require(engine.recovery.assets)
        #expect(report.missing == [names[0]])
        #expect(report.quarantined == ["stray.bin"], "unknown_files = quarantine (the default)")
        #expect(Set(report.removedSmall) == [names[2], "tiny.bin"])
        #expect(report.temporaryRemoved == 1)
        let imported = try #require(report.imported["shared recording.m4a"])
        #expect(imported.hasSuffix(".m4a") && UUID(uuidString: String(imported.dropLast(4))) != nil)
        #expect(engine.recovery.description.contains("assets:"))

        #expect(files(folder).filter { !["inbox", "quarantine"].contains($0) }.sorted() == [names[1], imported].sorted())
        #expect(files("\(folder)/quarantine") == ["stray.bin"])
        #expect(files("\(folder)/inbox").isEmpty)
        let rows = try engine.assets.assets()
        #expect(rows.first { $0.name == names[0] }?.state == .missing)
        #expect(rows.first { $0.name == imported }?.entity == nil, "imported without an owner")
        #expect(!rows.contains { $0.name == names[2] })

        // The missing file comes back: present again. Nothing else to do.
        try Data(repeating: 1, count: 100).write(to: URL(fileURLWithPath: "\(folder)/\(names[0])"))
        let again = try engine.assets.reconcile()
        #expect(again.foundAgain == [names[0]])
        #expect(try engine.assets.reconcile().isEmpty)
    }

    @Test func unknownFilesCanBeAdopted() throws {
        var fixture = EngineFixture()
        fixture.config.assets.unknownFiles = .adopt
        try fixture.open().shutdown()
        let folder = fixture.directory.databasePath + ".assets"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(repeating: 7, count: 64).write(to: URL(fileURLWithPath: "\(folder)/stray.bin"))
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.assets?.adopted == ["stray.bin"])
        let adopted = try #require(try engine.assets.assets().first)
        #expect(adopted.name == "stray.bin" && adopted.size == 64 && adopted.entity == nil)
        #expect(adopted.checksum == CRC32C.checksum([UInt8](repeating: 7, count: 64)))
    }

    @Test func filesACrashLeftInTheTrashAreRemovedAtTheNextOpen() throws {
        let fixture = EngineFixture()
        let name: String
        do {
            let engine = try fixture.open()
            let id = spawn(engine, 1)[0]
            name = try engine.assets.write([1, 2, 3], for: id).name
            try engine.shutdown()
        }
        // As if the process died right after the commit that deleted the entity.
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        try queue.write { db in try db.execute(sql: "DELETE FROM entities") }
        try queue.close()
        #expect(FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".assets/" + name))
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.assets?.trashEmptied == 1)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.databasePath + ".assets/" + name))
    }
}

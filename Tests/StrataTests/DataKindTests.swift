import Foundation
import GRDB
import Testing
@testable import Strata

/// Every table of a document belongs to exactly one kind of data (``DataKind``), the list
/// the salvage, the document check and the start's table check read.
@Suite struct DataKindTests {
    @Test func everyTableOfTheSchemaBelongsToExactlyOneKind() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        try engine.shutdown()
        let queue = try DatabaseQueue(path: fixture.directory.databasePath)
        let schema = try queue.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        }
        let listed = DataKind.allTables.map(\.name)
        #expect(Set(listed).count == listed.count, "a table listed under two kinds: \(listed)")
        #expect(Set(schema) == Set(listed), "in the schema only: \(Set(schema).subtracting(listed).sorted()); listed only: \(Set(listed).subtracting(schema).sorted())")
    }

    @Test func theSalvageCopiesTheEntitiesBeforeTheRowsThatNameThem() {
        let keyed = Salvage.keyed.map(\.table)
        #expect(keyed.firstIndex(of: "entities")! < keyed.firstIndex(of: "components")!)
        #expect(keyed.firstIndex(of: "entities")! < keyed.firstIndex(of: "jobs")!)
        #expect(keyed.firstIndex(of: "entities")! < keyed.firstIndex(of: "assets")!)
    }

    /// What the registry says the salvage copies, it copies: a document with rows in the
    /// tables a session fills (entities, segments, settings, operations, acknowledgements, a
    /// job, an asset), salvaged whole (`Repair.run` on an intact file), keeps every row of
    /// every table the registry marks as copied.
    @Test func aSalvageCopiesEveryRowOfEveryTableTheRegistrySaysItCopies() throws {
        var fixture = EngineFixture()
        fixture.config.history.keep = .seconds(3600)
        let engine = try fixture.open()
        var entities: [EntityID] = []
        for i in 0 ..< 50 { entities.append(engine.world.id(of: engine.world.spawn(Title("t\(i)"), Position(x: Float(i), y: 0)))!) }
        engine.world.setSetting(.string("dark"), for: "theme")
        for i in 0 ..< 5 { engine.appendOperation(kind: "shape.create", payload: [UInt8(i)]) }
        engine.recordAcknowledgement(from: NodeID(), clock: [engine.nodeID: 2])
        #expect(engine.flushNow())
        _ = try engine.jobs.enqueue("render", for: entities[0], timeout: .seconds(30))
        _ = try engine.assets.write([1, 2, 3], for: entities[1], timeout: .seconds(30))
        engine.world.despawn(try #require(engine.world.entity(for: entities[2])))
        #expect(engine.flushNow())
        try engine.shutdown()

        let location = StoreLocation(path: fixture.directory.databasePath)
        func rows(_ path: String) throws -> [String: Int] {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            return try queue.read { db in
                var counts: [String: Int] = [:]
                for table in DataKind.allTables where try db.tableExists(table.name) {
                    counts[table.name] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.name)") ?? 0
                }
                return counts
            }
        }
        let before = try rows(location.path)
        let outcome = try Repair.run(location, cause: "a test", options: Engine.storeOptions(config: fixture.config, options: fixture.options),
                                     logger: quietLogger)
        let after = try rows(location.path)
        var copied = 0
        for table in DataKind.allTables where table.salvage != .notCopied && (before[table.name] ?? 0) > 0 {
            #expect(after[table.name] == before[table.name], "\(table.name): \(before[table.name] ?? 0) rows before, \(after[table.name] ?? 0) after")
            copied += 1
        }
        #expect(copied >= 9, "the document filled too few tables to say much: \(before.filter { $0.value > 0 }.keys.sorted())")
        #expect(outcome.salvage != nil, "a salvage report")
    }

    @Test func doctorAndInspectAccountForEveryKind() throws {
        let fixture = EngineFixture()
        let engine = try fixture.open()
        let entity = engine.world.spawn(Title("a"))
        engine.world.setSetting(.string("dark"), for: "theme")
        #expect(engine.flushNow())
        _ = try engine.jobs.enqueue("render", for: try #require(engine.world.id(of: entity)), timeout: .seconds(30))
        #expect(engine.flushNow())
        try engine.shutdown()

        let inspection = try DatabaseInspection.inspect(path: fixture.directory.databasePath)
        #expect(inspection.rowsByKind["world"] ?? 0 >= 2, "the entity and its component type at least: \(inspection.rowsByKind)")
        #expect(inspection.rowsByKind["settings"] == 1)
        #expect(inspection.rowsByKind["jobs"] == 1)
        #expect(Set(inspection.rowsByKind.keys).isSubset(of: Set(DataKind.allCases.map(\.rawValue))))

        let report = try DoctorReport.examine(path: fixture.directory.databasePath)
        #expect(!report.tables.isEmpty, "dbstat is in this SQLite build (the bench's pages per B-tree need it too)")
        #expect(report.kinds["unknown"] == nil, "every table and index is some kind's: \(report.kinds)")
        #expect(report.kinds.values.reduce(0, +) == report.tables.values.reduce(0, +))
        #expect(report.kinds["world"] ?? 0 > 0 && report.kinds["jobs"] ?? 0 > 0)
    }
}

/// docs/storage.md's table list is the registry's, at the build's schema version.
@Suite struct StorageDocTests {
    @Test func theStorageDocListsEveryTableOfTheRegistry() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/storage.md"), encoding: .utf8)
        let heading = "## Tables (schema version \(Store.schemaVersion))"
        let start = try #require(text.range(of: heading), "docs/storage.md has no \"\(heading)\"")
        let section = text[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var listed: [String] = []
        for line in section[..<end].split(separator: "\n") where line.hasPrefix("| `") {
            let first = line.dropFirst(2).prefix { $0 != "|" }   // the table column: `a`, `b`
            listed += first.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
        }
        let registry = DataKind.allTables.map(\.name)
        #expect(Set(listed).count == listed.count, "a table listed twice: \(listed)")
        #expect(Set(listed) == Set(registry),
                "only in docs/storage.md: \(Set(listed).subtracting(registry).sorted()); only in DataKind: \(Set(registry).subtracting(listed).sorted())")
    }
}

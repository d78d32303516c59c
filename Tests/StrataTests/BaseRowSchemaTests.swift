import Foundation
import GRDB
import Testing
@testable import Strata

/// Base rows without the time they were folded (schema 22): nothing read it, and it cost 6
/// bytes in every row. The migration drops its NOT NULL in place.
@Suite struct BaseRowSchemaTests {
    @Test func rowsOfAnOlderSchemaStayWhereTheyAreAndNewOnesStoreNoTime() throws {
        let (queue, path) = try olderSchemaFile(upTo: "v21:")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try queue.write { db in
            try db.execute(sql: "INSERT INTO entities (num, id, created_at) VALUES (1, ?, 0)", arguments: [EntityID().withBytes { Data($0) }])
            try db.execute(sql: "INSERT INTO components (entity_num, type_id, version, payload, updated_at) VALUES (1, 1, 1, x'0102', 1234)")
        }
        #expect(throws: DatabaseError.self) {
            try queue.write { try $0.execute(sql: "INSERT INTO components (entity_num, type_id, version, payload) VALUES (1, 2, 1, x'03')") }
        }
        let root = "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = 'components'"
        let rootBefore = try queue.read { db in try Int.fetchOne(db, sql: root) }
        try Store.migrator.migrate(queue)
        #expect(try queue.read { db in try Int.fetchOne(db, sql: root) } == rootBefore, "the rows stay where they are: no copy")
        #expect(try queue.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        #expect(try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") } == Store.schemaVersion)
        try queue.write { try $0.execute(sql: "INSERT INTO components (entity_num, type_id, version, payload) VALUES (1, 2, 1, x'03')") }
        let rows = try queue.read { db in try Row.fetchAll(db, sql: "SELECT type_id, payload, updated_at FROM components ORDER BY type_id") }
        #expect(rows.map { $0["payload"] as Data? } == [Data([1, 2]), Data([3])])
        #expect(rows.map { $0["updated_at"] as Int64? } == [1234, nil], "the old row keeps its time, the new one has none")
        try queue.close()
    }
}

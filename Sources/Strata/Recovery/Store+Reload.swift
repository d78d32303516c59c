import GRDB
import GRDBSQLite
import Logging

/// What a reload found.
public struct LoadSummary: Sendable, Equatable {
    public var entities = 0
    public var components = 0
    /// Rows of component types this build does not register: kept in the database untouched.
    public var unknownTypeRows = 0
    /// Rows whose payload is newer than this build, or does not decode: kept, not loaded.
    public var undecodableRows = 0
}

extension Store {
    /// Rebuilds `world` from the database: every entity, and every component of a
    /// registered type. Nothing is marked dirty and nothing in the database changes.
    ///
    /// Also returns the interned id of every registered type (creating missing ones),
    /// indexed like the world's columns, for the writer's cache.
    func load(into world: World, logger: Logger) throws -> (LoadSummary, typeIDs: [Int64?]) {
        var summary = LoadSummary()
        var typeIDs: [Int64?] = []
        do {
            try queue.writeWithoutTransaction { db in
                for type in world.componentTypes {
                    typeIDs.append(try Writer.internTypeName(type.typeName, db))
                }
            }
            try queue.read { db in
                // type_id → (column index, name)
                var columnByTypeID: [Int64: Int] = [:]
                var nameByTypeID: [Int64: String] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT id, name FROM component_types") {
                    let id: Int64 = row["id"]
                    let name: String = row["name"]
                    nameByTypeID[id] = name
                    if let i = world.columns.firstIndex(where: { $0.componentType.typeName == name }) {
                        columnByTypeID[id] = i
                    }
                }

                // GRDB owns (and finalizes) the statements: keep them alive while stepping.
                let entitiesStatement = try db.makeStatement(sql: "SELECT id FROM entities")
                defer { withExtendedLifetime(entitiesStatement) {} }
                let entities = entitiesStatement.sqliteStatement
                var indexByID: [EntityID: UInt32] = [:]
                while sqlite3_step(entities) == SQLITE_ROW {
                    guard let id = EntityID(bytes: blob(entities, 0)) else { continue }
                    let entity = world.makeEntity(id: id, spawnPending: false)
                    indexByID[id] = entity.index
                    summary.entities += 1
                }

                let componentsStatement = try db.makeStatement(
                    sql: "SELECT entity_id, type_id, version, payload FROM components")
                defer { withExtendedLifetime(componentsStatement) {} }
                let components = componentsStatement.sqliteStatement
                var warned: Set<Int64> = []
                while sqlite3_step(components) == SQLITE_ROW {
                    let typeID = sqlite3_column_int64(components, 1)
                    guard let columnIndex = columnByTypeID[typeID] else {
                        summary.unknownTypeRows += 1
                        continue
                    }
                    guard let id = EntityID(bytes: blob(components, 0)), let entityIndex = indexByID[id] else { continue }
                    let column = world.columns[columnIndex]
                    let version = Int(sqlite3_column_int64(components, 2))
                    do {
                        guard version <= column.componentType.payloadVersion else {
                            throw PayloadError.invalid("version \(version) is newer than this build's \(column.componentType.payloadVersion)")
                        }
                        var reader = PayloadReader(blob(components, 3))
                        try column.load(from: &reader, version: version, at: entityIndex)
                        summary.components += 1
                    } catch {
                        summary.undecodableRows += 1
                        if warned.insert(typeID).inserted {
                            logger.warning("reload: rows of \(nameByTypeID[typeID] ?? "?") kept but not loaded: \(error)")
                        }
                    }
                }
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
        return (summary, typeIDs)
    }
}

/// The bytes of a BLOB column, valid until the statement steps again.
private func blob(_ statement: OpaquePointer, _ column: Int32) -> UnsafeRawBufferPointer {
    let count = Int(sqlite3_column_bytes(statement, column))
    return UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, column), count: count)
}

import GRDB
import GRDBSQLite
import Logging

/// What a reload found.
public struct LoadSummary: Sendable, Equatable {
    public var entities = 0
    /// Components in the rebuilt world.
    public var components = 0
    /// Rows and records of component types this build does not register: kept in the
    /// database untouched.
    public var unknownTypeRows = 0
    /// Rows and records whose payload is newer than this build, or does not decode: kept, not loaded.
    public var undecodableRows = 0
    /// Segment rows replayed over the base rows, and the records in them.
    public var segments = 0
    public var segmentRecords = 0
    /// Segment rows that cannot be read (see ``SegmentDamage``): kept, skipped.
    public var unreadableSegments = 0
}

extension Store {
    /// Rebuilds `world` from the database: every entity, the base rows of every
    /// registered type, then the segment log replayed over them in commit order (newest
    /// wins, tombstones remove, records of entities that are gone are ignored). Nothing is
    /// marked dirty and nothing in the database changes.
    ///
    /// Also returns the interned id of every registered type (creating missing ones),
    /// indexed like the world's columns, and the writer's picture of the segment log.
    ///
    /// Cost: one pass over `entities` and `components` in key order (merged, no lookup per
    /// row) and one over `segments`; O(world + log), at open only.
    func load(into world: World, logger: Logger) throws -> (LoadSummary, typeIDs: [Int64?], log: SegmentLog) {
        precondition(world.entityCount == 0, "reload into an empty world")
        var summary = LoadSummary()
        var typeIDs: [Int64?] = []
        let log = SegmentLog()
        do {
            try queue.writeWithoutTransaction { db in
                for type in world.componentTypes {
                    typeIDs.append(try ComponentTypeNames.intern(type.typeName, db))
                }
            }
            try queue.read { db in
                let names = try ComponentTypeNames.all(db)
                var columnByTypeID: [Int64: Int] = [:]
                for (id, name) in names {
                    if let i = world.columns.firstIndex(where: { $0.componentType.typeName == name }) { columnByTypeID[id] = i }
                }
                var loader = ComponentLoader(world: world, columnByTypeID: columnByTypeID, names: names, logger: logger)

                // Entities in number order: the world gives them indices 0, 1, 2… in that order.
                let entitiesStatement = try db.makeStatement(sql: "SELECT num, id FROM entities ORDER BY num")
                defer { withExtendedLifetime(entitiesStatement) {} }
                let entities = entitiesStatement.sqliteStatement
                var numbers: [EntityNumber] = []
                while sqlite3_step(entities) == SQLITE_ROW {
                    guard let id = EntityID(bytes: columnBlob(entities, 1)) else { continue }
                    let number = sqlite3_column_int64(entities, 0)
                    let entity = world.makeEntity(id: id, number: number, spawnPending: false)
                    precondition(entity.index == UInt32(numbers.count))
                    numbers.append(number)
                }
                summary.entities = numbers.count

                // Base rows, in (entity_num, type_id) order: a merge with `numbers`.
                let baseStatement = try db.makeStatement(sql: "SELECT entity_num, type_id, version, payload FROM components")
                defer { withExtendedLifetime(baseStatement) {} }
                let base = baseStatement.sqliteStatement
                var position = 0
                var baseBytes = 0
                while sqlite3_step(base) == SQLITE_ROW {
                    let number = sqlite3_column_int64(base, 0)
                    while position < numbers.count && numbers[position] < number { position += 1 }
                    log.baseRows += 1
                    let payload = columnBlob(base, 3)
                    baseBytes += payload.count
                    guard position < numbers.count && numbers[position] == number else { continue }
                    loader.put(typeID: sqlite3_column_int64(base, 1), version: Int(sqlite3_column_int64(base, 2)),
                               payload: payload, at: UInt32(position))
                }
                if log.baseRows > 0 { log.baseRowBytes = baseBytes / log.baseRows + 16 }

                // The segment log, in commit order.
                let replay = try SegmentReplay.run(db, log: log, logger: logger) { record in
                    guard let index = Self.index(of: record.key.entity, in: numbers) else { return false }
                    if let version = record.version {
                        loader.put(typeID: record.key.typeID, version: version, payload: record.payload, at: index)
                    } else {
                        loader.remove(typeID: record.key.typeID, at: index)
                    }
                    return true
                }
                summary.segments = replay.rows
                summary.segmentRecords = replay.records
                summary.unreadableSegments = replay.unreadableRows
                world.nextEntityNumber = max(numbers.last ?? 0, replay.highestEntityNumber) + 1
                summary.unknownTypeRows = loader.unknownTypeRows
                summary.undecodableRows = loader.undecodableRows
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
        summary.components = world.columns.reduce(0) { $0 + $1.count }
        return (summary, typeIDs, log)
    }

    /// The world index of entity `number`: its position in the sorted `numbers`.
    private static func index(of number: EntityNumber, in numbers: [EntityNumber]) -> UInt32? {
        var low = 0, high = numbers.count
        while low < high {
            let mid = (low + high) / 2
            if numbers[mid] < number { low = mid + 1 } else { high = mid }
        }
        return low < numbers.count && numbers[low] == number ? UInt32(low) : nil
    }
}

/// Puts decoded values into the world's columns during a reload, counting what it
/// cannot load. Opening thread.
private struct ComponentLoader {
    let world: World
    let columnByTypeID: [Int64: Int]
    let names: [Int64: String]
    let logger: Logger
    var unknownTypeRows = 0
    var undecodableRows = 0
    private var warned: Set<Int64> = []

    init(world: World, columnByTypeID: [Int64: Int], names: [Int64: String], logger: Logger) {
        self.world = world
        self.columnByTypeID = columnByTypeID
        self.names = names
        self.logger = logger
    }

    /// A value for the key: decoded into its column. One that does not decode leaves the
    /// key without a value (the newest value is the one that counts, and it is not
    /// readable by this build); its bytes stay in the file.
    mutating func put(typeID: Int64, version: Int, payload: UnsafeRawBufferPointer, at entityIndex: UInt32) {
        guard let columnIndex = columnByTypeID[typeID] else {
            unknownTypeRows += 1
            return
        }
        let column = world.columns[columnIndex]
        do {
            guard version <= column.componentType.payloadVersion else {
                throw PayloadError.invalid("version \(version) is newer than this build's \(column.componentType.payloadVersion)")
            }
            var reader = PayloadReader(payload)
            try column.load(from: &reader, version: version, at: entityIndex)
        } catch {
            undecodableRows += 1
            column.forget(entityIndex)
            if warned.insert(typeID).inserted {
                logger.warning("reload: rows of \(names[typeID] ?? "?") kept but not loaded: \(error)")
            }
        }
    }

    mutating func remove(typeID: Int64, at entityIndex: UInt32) {
        guard let columnIndex = columnByTypeID[typeID] else { return }
        world.columns[columnIndex].forget(entityIndex)
    }
}

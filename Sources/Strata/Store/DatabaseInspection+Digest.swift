import Foundation
import GRDB

extension DatabaseInspection {
    /// The file's ``WorldDigest``: every component value as a reload would give it (the
    /// base rows with `newest`, the segment log's newest record of each key, over them) by
    /// its entity's id, in the encoding stored. `replicated` covers the types the file
    /// records as replicated. Reads only; O(file). Nil for a file with no world in it (an
    /// empty document).
    static func digest(_ db: Database, newest: [SegmentKey: [UInt8]?]) throws -> WorldDigest? {
        var accumulator = WorldDigest.Accumulator()
        guard try forEachValue(db, newest: newest, { accumulator.add(type: $0, entity: $1, payload: $2) }) != nil else { return nil }
        return accumulator.digest(replicated: try ComponentTypeNames.replicated(db))
    }

    /// Calls `body` with every component value as a reload would give it (type name, entity
    /// id, payload): with `asOf` (Unix ms), as the history window had it then
    /// (`HistoryQueries`; `newest` then holds the records written by then). Returns the
    /// entities, or nil for a file with no world in it. Rows that do not read as they
    /// should (a damaged id) are skipped.
    static func forEachValue(_ db: Database, newest: [SegmentKey: [UInt8]?], asOf: Int64? = nil,
                             _ body: (String, EntityID, UnsafeRawBufferPointer) -> Void) throws -> Int? {
        guard try db.tableExists("components"), try db.tableExists("entities"), try db.tableExists("component_types")
        else { return nil }
        let names = try ComponentTypeNames.all(db)
        let arguments: StatementArguments = asOf.map { [$0] } ?? []
        var ids: [EntityNumber: EntityID] = [:]
        let entities = try Row.fetchCursor(db, sql: HistoryQueries.entities(asOf: asOf, layout: try PendingEntities.layout(db)),
                                           arguments: arguments)
        while let row = try entities.next() {
            guard let number = row.value("num", as: EntityNumber.self), let data = row.value("id", as: Data.self) else { continue }
            if let id = data.withUnsafeBytes({ EntityID(bytes: $0) }) { ids[number] = id }
        }
        for number in try PendingEntities.despawnNumbers(db) { ids[number] = nil }
        let rows = try Row.fetchCursor(db, sql: HistoryQueries.baseRows(asOf: asOf))
        while let row = try rows.next() {
            guard let number = row.value("entity_num", as: EntityNumber.self), let typeID = row.value("type_id", as: Int64.self),
                  let payload = row.value("payload", as: Data.self) else { continue }
            let key = SegmentKey(entity: number, typeID: typeID)
            guard newest[key] == nil, let id = ids[key.entity], let name = names[key.typeID] else { continue }
            payload.withUnsafeBytes { body(name, id, $0) }
        }
        for (key, record) in newest {
            guard let payload = record, let id = ids[key.entity], let name = names[key.typeID] else { continue }
            payload.withUnsafeBytes { body(name, id, $0) }
        }
        return ids.count
    }
}

import Foundation
import GRDB

extension DatabaseInspection {
    /// The file's ``WorldDigest``: every component value as a reload would give it (the
    /// base rows with `newest`, the segment log's newest record of each key, over them) by
    /// its entity's id, in the encoding stored. `replicated` covers the types the file
    /// records as replicated. Reads only; O(file). Nil for a file with no world in it (an
    /// empty document).
    static func digest(_ db: Database, newest: [SegmentKey: [UInt8]?]) throws -> WorldDigest? {
        guard try db.tableExists("components"), try db.tableExists("entities"), try db.tableExists("component_types")
        else { return nil }
        let names = try ComponentTypeNames.all(db)
        var ids: [EntityNumber: EntityID] = [:]
        let entities = try Row.fetchCursor(db, sql: "SELECT num, id FROM entities")
        while let row = try entities.next() {
            let data: Data = row["id"]
            if let id = data.withUnsafeBytes({ EntityID(bytes: $0) }) { ids[row["num"]] = id }
        }
        var accumulator = WorldDigest.Accumulator()
        let rows = try Row.fetchCursor(db, sql: "SELECT entity_num, type_id, payload FROM components")
        while let row = try rows.next() {
            let key = SegmentKey(entity: row["entity_num"], typeID: row["type_id"])
            guard newest[key] == nil, let id = ids[key.entity], let name = names[key.typeID] else { continue }
            let payload: Data = row["payload"]
            payload.withUnsafeBytes { accumulator.add(type: name, entity: id, payload: $0) }
        }
        for (key, record) in newest {
            guard let payload = record, let id = ids[key.entity], let name = names[key.typeID] else { continue }
            payload.withUnsafeBytes { accumulator.add(type: name, entity: id, payload: $0) }
        }
        return accumulator.digest(replicated: try ComponentTypeNames.replicated(db))
    }
}

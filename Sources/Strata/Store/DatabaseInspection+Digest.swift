import Foundation
import GRDB
import Logging

extension DatabaseInspection {
    /// The file's ``WorldDigest``: every component value as a reload would give it (the
    /// base rows with the segment log replayed over them) by its entity's id, in the
    /// encoding stored. `replicated` covers the types the file records as replicated.
    /// Reads only; O(file). Nil for a file with no world in it (an empty document).
    static func digest(_ db: Database) throws -> WorldDigest? {
        guard try db.tableExists("components"), try db.tableExists("entities") else { return nil }
        // The newest record of each key in the log: a put's payload, or nil for a removal.
        var newest: [SegmentKey: [UInt8]?] = [:]
        if try db.tableExists("segments") {
            _ = try SegmentReplay.run(db, log: SegmentLog(), logger: Logger(label: "strata.inspect")) { record, _ in
                newest[record.key] = record.isRemoval ? .some(nil) : Array(record.payload)
            }
        }
        let names = try ComponentTypeNames.all(db)
        var ids: [EntityNumber: EntityID] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT num, id FROM entities") {
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

import Foundation
import GRDB

extension DatabaseInspection {
    /// The file's ``WorldDigest``: every component value as a reload would give it (the
    /// base rows with `newest`, the segment log's newest record of each key, over them) by
    /// its entity's id, in the encoding stored. `replicated` covers the types the file
    /// records as replicated. Reads only; O(file). Nil for a file with no world in it (an
    /// empty document).
    static func digest(_ db: Database, newest: [SegmentKey: StoredValue?]) throws -> WorldDigest? {
        var accumulator = WorldDigest.Accumulator()
        guard try forEachValue(db, newest: newest, { accumulator.add(type: $0, entity: $1, payload: $2) }) != nil else { return nil }
        return accumulator.digest(replicated: try ComponentTypeNames.replicated(db))
    }

    /// Calls `body` with every component value as a reload would give it (type name, entity
    /// id, payload): with `asOf` (Unix ms), as the history window had it then
    /// (`HistoryQueries`; `newest` then holds the records written by then). Returns the
    /// entities, or nil for a file with no world in it. Rows that do not read as they
    /// should (a damaged id) are skipped. The engine's stored stamps are given in their
    /// self-contained encoding (``selfContained(_:_:)``), the one a world's digest hashes.
    static func forEachValue(_ db: Database, newest: [SegmentKey: StoredValue?], asOf: Int64? = nil,
                             _ body: (String, EntityID, UnsafeRawBufferPointer) -> Void) throws -> Int? {
        guard try db.tableExists("components"), try db.tableExists("entities"), try db.tableExists("component_types")
        else { return nil }
        let names = try ComponentTypeNames.all(db)
        var stamps = SelfContainedStamps(db)
        let arguments: StatementArguments = asOf.map { [$0] } ?? []
        var ids: [EntityNumber: EntityID] = [:]
        let entities = try Row.fetchCursor(db, sql: HistoryQueries.entities(asOf: asOf, layout: try PendingEntities.layout(db)),
                                           arguments: arguments)
        let node = try EntityIDColumn.node(db)   // an id stored NULL is made from it and the number
        while let row = try entities.next() {
            guard let number = row.value("num", as: EntityNumber.self) else { continue }
            let data = try row.decode(DatabaseValue.self, forColumn: "id")
            let id: EntityID?
            switch data.storage {
            case .null: id = EntityIDColumn.id(stored: nil, number: number, node: node)
            case .blob(let bytes): id = bytes.withUnsafeBytes { EntityIDColumn.id(stored: $0, number: number, node: node) }
            default: id = nil
            }
            if let id { ids[number] = id }
        }
        for number in try PendingEntities.despawnNumbers(db) { ids[number] = nil }
        let rows = try Row.fetchCursor(db, sql: HistoryQueries.baseRows(asOf: asOf))
        while let row = try rows.next() {
            guard let number = row.value("entity_num", as: EntityNumber.self), let typeID = row.value("type_id", as: Int64.self),
                  let payload = row.value("payload", as: Data.self) else { continue }
            let version = row.value("version", as: Int.self) ?? 0   // one that does not read: the payload as stored
            let key = SegmentKey(entity: number, typeID: typeID)
            guard newest[key] == nil, let id = ids[key.entity], let name = names[key.typeID] else { continue }
            try stamps.given(name, version, [UInt8](payload)).withUnsafeBytes { body(name, id, $0) }
        }
        for (key, record) in newest {
            guard let value = record, let id = ids[key.entity], let name = names[key.typeID] else { continue }
            try stamps.given(name, value.version, value.payload).withUnsafeBytes { body(name, id, $0) }
        }
        return ids.count
    }
}

extension DatabaseInspection {
    /// A stored value as the newest record of its key left it (nil in the map: a removal).
    struct StoredValue {
        var version: Int
        var payload: [UInt8]

        /// A record's value; nil for a removal.
        init?(_ record: SegmentRecord) {
            guard let version = record.version else { return nil }
            self.version = version
            payload = Array(record.payload)
        }
    }

    /// The engine's stored stamps (`strata.replica`, version 3: nodes and types by the
    /// document's numbers) in their self-contained encoding, the one that compares across
    /// documents and with a world's digest. The numbers are read at the first such row.
    struct SelfContainedStamps {
        let db: Database
        private var names: StampNames?

        init(_ db: Database) { self.db = db }

        /// `payload` as given to a reader: a version-3 state re-encoded self-contained, any
        /// other value (and a state that does not read) as stored.
        mutating func given(_ type: String, _ version: Int, _ payload: [UInt8]) throws -> [UInt8] {
            guard type == ReplicaState.typeName, version >= 3 else { return payload }
            if names == nil { names = try StampNames(db, world: World()) }
            guard let names else { return payload }
            let state = try? payload.withUnsafeBytes { bytes in
                var reader = PayloadReader(bytes)
                return try ReplicaState(version3: &reader, names: names) { _, _ in }
            }
            guard let state else { return payload }
            var writer = PayloadWriter()
            state.encode(to: &writer)
            return writer.bytes
        }
    }
}

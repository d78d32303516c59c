import Foundation
import GRDB
import Logging
import Testing
@testable import Strata

/// What a reload of a database file would give, read without an engine: entities,
/// and each one's components (base rows with the segment log replayed over them), as
/// (payload version, payload bytes) by type name. Tests assert on the file through it,
/// whichever of the base rows or the segments holds a value. The engine's stored stamps
/// (`strata.replica`) are given self-contained (version 2), as they compare across documents.
struct PersistedComponents: Equatable {
    struct Value: Equatable {
        var version: Int
        var payload: [UInt8]
    }

    var entities: [EntityID: [String: Value]] = [:]

    static func read(_ path: String) throws -> PersistedComponents {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var result = PersistedComponents()
            let names = try ComponentTypeNames.all(db)
            var idByNumber: [Int64: EntityID] = [:]
            let node = try EntityIDColumn.node(db)
            // Despawned entities whose rows wait for compaction are not in the world; spawned ones are.
            let layout = try PendingEntities.layout(db)
            let despawning = try PendingEntities.despawnNumbers(db)
            for row in try Row.fetchAll(db, sql: HistoryQueries.entities(asOf: nil, layout: layout)) where !despawning.contains(row["num"]) {
                let stored = row["id"] as Data?   // NULL: made from the node and the number
                let id = try #require(stored.map { $0.withUnsafeBytes { EntityIDColumn.id(stored: $0, number: row["num"], node: node) } }
                                      ?? EntityIDColumn.id(stored: nil, number: row["num"], node: node))
                idByNumber[row["num"]] = id
                result.entities[id] = [:]
            }
            for row in try Row.fetchAll(db, sql: "SELECT entity_num, type_id, version, payload FROM components") {
                guard let id = idByNumber[row["entity_num"]] else { continue }
                result.entities[id]![names[row["type_id"]]!] = Value(version: row["version"], payload: [UInt8](row["payload"] as Data))
            }
            _ = try SegmentReplay.run(db, log: SegmentLog(), logger: quietLogger) { record, _ in
                guard let id = idByNumber[record.key.entity] else { return }
                let name = names[record.key.typeID]!
                result.entities[id]![name] = record.version.map { Value(version: $0, payload: Array(record.payload)) }
            }
            // Stored stamps name nodes and types by the document's own numbers: read here as
            // the self-contained version (names and node ids), which compares across documents.
            var stamps = DatabaseInspection.SelfContainedStamps(db)
            for (id, components) in result.entities {
                guard let stored = components[ReplicaState.typeName], stored.version >= 3 else { continue }
                result.entities[id]![ReplicaState.typeName] = Value(version: ReplicaState.selfContainedVersion,
                                                                  payload: try stamps.given(ReplicaState.typeName, stored.version, stored.payload))
            }
            return result
        }
    }

    /// Components of `type` in the file.
    func count(_ type: any Component.Type) -> Int {
        entities.values.filter { $0[type.typeName] != nil }.count
    }

    /// Components in the file, all types.
    var componentCount: Int { entities.values.reduce(0) { $0 + $1.count } }

    /// Entities whose `C` is `value`.
    func count<C: Component>(_ value: C) -> Int {
        var writer = PayloadWriter()
        value.encode(to: &writer)
        return entities.values.filter { $0[C.typeName]?.payload == writer.bytes }.count
    }

    /// The entity's `C`, decoded.
    func value<C: Component>(_ type: C.Type, of id: EntityID) throws -> C? {
        guard let stored = entities[id]?[C.typeName] else { return nil }
        return try stored.payload.withUnsafeBytes { bytes in
            var reader = PayloadReader(bytes)
            return try C(from: &reader, version: stored.version)
        }
    }
}

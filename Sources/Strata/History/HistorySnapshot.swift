import Foundation
import GRDB
import GRDBSQLite
import Logging

/// The world at a time in the history window as the file holds it, byte for byte, for a
/// tool that has no component types (`strata inspect --at`): entities, values per type and
/// the digest, which equals the one of ``Engine/world(at:)``'s world (``World/digest()``).
/// Reads only; any thread.
public struct HistorySnapshot: Sendable, Equatable, Codable {
    /// The time asked for (Unix ms).
    public var atMilliseconds: Int64
    /// The last flush at or before it, whose world this is (nil: none in the window yet).
    public var flushMilliseconds: Int64?
    public var entityCount: Int
    /// Values per type name.
    public var components: [String: Int]
    public var digest: WorldDigest

    static func read(at milliseconds: Int64, _ db: Database, window: HistoryWindow) throws -> HistorySnapshot {
        var ids: [EntityNumber: EntityID] = [:]
        let entities = try Row.fetchCursor(db, sql: HistoryQueries.entities(asOf: milliseconds), arguments: [milliseconds])
        while let row = try entities.next() {
            let data: Data = row[1]
            if let id = data.withUnsafeBytes({ EntityID(bytes: $0) }) { ids[row[0]] = id }
        }
        var values: [SegmentKey: [UInt8]] = [:]
        let base = try Row.fetchCursor(db, sql: HistoryQueries.baseRows(asOf: milliseconds))
        while let row = try base.next() {
            let key = SegmentKey(entity: row[0], typeID: row[1])
            guard ids[key.entity] != nil else { continue }
            values[key] = [UInt8](row[3] as Data)
        }
        _ = try SegmentReplay.run(db, log: SegmentLog(), logger: Logger(label: "strata.history"), through: milliseconds) { record, _ in
            guard ids[record.key.entity] != nil else { return }
            values[record.key] = record.isRemoval ? nil : Array(record.payload)
        }
        let names = try ComponentTypeNames.all(db)
        var counts: [String: Int] = [:]
        var accumulator = WorldDigest.Accumulator()
        for (key, payload) in values {
            guard let name = names[key.typeID], let id = ids[key.entity] else { continue }
            counts[name, default: 0] += 1
            payload.withUnsafeBytes { accumulator.add(type: name, entity: id, payload: $0) }
        }
        return HistorySnapshot(atMilliseconds: milliseconds,
                               flushMilliseconds: window.flushes.last { $0.atMilliseconds <= milliseconds }?.atMilliseconds,
                               entityCount: ids.count, components: counts,
                               digest: accumulator.digest(replicated: try ComponentTypeNames.replicated(db)))
    }
}


/// The history of a document read from its file (`strata history`, `strata inspect --at`),
/// whether an engine has it open or not. Any thread.
public enum DocumentHistory {
    /// The window; nil when the file keeps none.
    public static func window(path: String) throws -> HistoryWindow? {
        try StoreLocation(path: path).readExisting { try HistoryReader.window($0) }
    }

    /// The world at `milliseconds` (Unix ms), checked against the window (`now`: its end;
    /// nil: the clock's now).
    public static func snapshot(path: String, at milliseconds: Int64, now: Int64? = nil) throws -> HistorySnapshot {
        let now = now ?? unixMilliseconds()
        return try StoreLocation(path: path).readExisting { db in
            let window = try HistoryReader.requireWindow(holding: milliseconds, now: now, db)
            return try HistorySnapshot.read(at: milliseconds, db, window: window)
        }
    }
}

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
        var newest: [SegmentKey: DatabaseInspection.StoredValue?] = [:]
        _ = try SegmentReplay.run(db, log: SegmentLog(), logger: Logger(label: "strata.history"), through: milliseconds) { record, _ in
            newest[record.key] = .some(DatabaseInspection.StoredValue(record))
        }
        var counts: [String: Int] = [:]
        var accumulator = WorldDigest.Accumulator()
        let entities = try DatabaseInspection.forEachValue(db, newest: newest, asOf: milliseconds) { type, id, payload in
            counts[type, default: 0] += 1
            accumulator.add(type: type, entity: id, payload: payload)
        }
        return HistorySnapshot(atMilliseconds: milliseconds,
                               flushMilliseconds: window.flushes.last { $0.atMilliseconds <= milliseconds }?.atMilliseconds,
                               entityCount: entities ?? 0, components: counts,
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

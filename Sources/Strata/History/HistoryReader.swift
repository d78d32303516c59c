import GRDB
import GRDBSQLite
import Logging

/// Reads the history window of a document through a read-only connection of its own, so
/// the writer goes on (`Sources/Strata/History`). Any thread.
enum HistoryReader {
    /// The window as the file has it; nil when it keeps no flush.
    static func window(_ db: Database) throws -> HistoryWindow? {
        guard try db.tableExists("history_flushes") else { return nil }
        // Typed by the query (a damaged row reads as zeros and an empty reason, never a crash).
        let flushes = try Row.fetchAll(db, sql: """
            SELECT coalesce(CAST(at AS INTEGER), 0) AS at, coalesce(CAST(reason AS TEXT), '') AS reason,
                   coalesce(CAST(keys AS INTEGER), 0) AS keys, coalesce(CAST(spawns AS INTEGER), 0) AS spawns,
                   coalesce(CAST(despawns AS INTEGER), 0) AS despawns
            FROM history_flushes ORDER BY id
            """).map { row in
            HistoryFlush(atMilliseconds: try row.decode(forColumn: "at"),
                         reasons: try row.decode(String.self, forColumn: "reason").split(separator: ",").map(String.init),
                         keys: try row.decode(forColumn: "keys"), spawns: try row.decode(forColumn: "spawns"),
                         despawns: try row.decode(forColumn: "despawns"))
        }
        guard let first = flushes.first, let last = flushes.last else { return nil }
        let floor = try Int64.fetchOne(db, sql: "SELECT history_floor FROM compaction_state WHERE id = 1") ?? 0
        let segmentBytes = try Int.fetchOne(db, sql: "SELECT coalesce(sum(length(records)), 0) FROM segments WHERE created_at >= ?",
                                            arguments: [floor]) ?? 0
        let keptBytes = try Int.fetchOne(db, sql: "SELECT coalesce(sum(length(payload)), 0) + count(*) * 16 FROM despawned_components") ?? 0
        return HistoryWindow(startMilliseconds: max(floor, first.atMilliseconds), endMilliseconds: last.atMilliseconds,
                             flushes: flushes.filter { $0.atMilliseconds >= floor }, bytes: segmentBytes + keptBytes)
    }

    /// The window, checked to hold `milliseconds` (no later than `now`).
    static func requireWindow(holding milliseconds: Int64, now: Int64, _ db: Database) throws -> HistoryWindow {
        guard let window = try window(db) else { throw HistoryError.noHistory("the document keeps no flush ([history] keep_secs)") }
        guard window.contains(milliseconds, now: now) else {
            throw HistoryError.outsideWindow(requested: milliseconds, start: window.startMilliseconds, end: now)
        }
        return window
    }

    /// The world as the flushes up to `milliseconds` left it, with `types` registered (in
    /// their order, so its columns line up with the world they come from). Values of types
    /// not given are not loaded (as at a reload). Nothing is marked dirty.
    static func world(at milliseconds: Int64, types: [any Component.Type], _ db: Database, logger: Logger) throws -> World {
        let world = World()
        for type in types { world.register(any: type) }
        var ids: [String: Int64] = [:]
        for (id, name) in try ComponentTypeNames.all(db) { ids[name] = id }
        let typeIDs = types.map { ids[$0.typeName] }
        _ = try Store.rebuild(world, typeIDs: typeIDs, log: SegmentLog(), db, logger: logger, asOf: milliseconds)
        return world
    }
}

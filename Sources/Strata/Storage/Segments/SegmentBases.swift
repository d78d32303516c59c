import GRDB
import GRDBSQLite

/// The bases a reader of the log needs to decode coded records (``XorCoding``): the newest
/// payload of each key among the records read so far, and, for a key the log has not named
/// yet, its base row. Used by ``SegmentReplay`` (the reload, `strata inspect`, the history,
/// the salvage's fold of unregistered types); the compactor keeps its own (its step's newest
/// records, then the base rows). Owned by the reading thread, for one pass over the log.
final class SegmentBases {
    /// A key whose newest record cannot be a base: a tombstone, a payload over ``XorCoding/maxBaseBytes``.
    private static let none = -1 ..< -1

    private var arena: [UInt8] = []
    private var newest: [SegmentKey: Range<Int>] = [:]
    private let db: Database
    private var baseRow: Statement?

    init(_ db: Database) { self.db = db }

    /// `record` is now its key's newest (after it was passed on).
    func note(_ record: SegmentRecord) {
        guard !record.isRemoval, record.payload.count <= XorCoding.maxBaseBytes else {
            newest[record.key] = Self.none
            return
        }
        let start = arena.count
        arena.append(contentsOf: record.payload)
        newest[record.key] = start ..< arena.count
    }

    /// Copies `key`'s payload before the record being read into `base`; false when it has
    /// none (a tombstone, or no record and no base row). Throws SQLite's error when its base
    /// row cannot be read.
    func lookup(_ key: SegmentKey, into base: inout [UInt8]) throws -> Bool {
        if let range = newest[key] {
            guard range != Self.none else { return false }
            base.removeAll(keepingCapacity: true)
            base.append(contentsOf: arena[range])
            return true
        }
        return try Self.baseRow(key, of: db, statement: &baseRow, into: &base)
    }

    /// Reads `key`'s base row's payload into `base` (a despawned entity's kept row, under a
    /// history window); false when it has none.
    static func baseRow(_ key: SegmentKey, of db: Database, statement: inout Statement?, into base: inout [UInt8]) throws -> Bool {
        // A despawned entity's rows are kept in `despawned_components` while a history
        // window holds it (`HistoryRows`): its records in the window read against them.
        let select = try statement ?? db.makeStatement(sql: """
            SELECT payload FROM components WHERE entity_num = ?1 AND type_id = ?2
            UNION ALL SELECT payload FROM despawned_components WHERE entity_num = ?1 AND type_id = ?2
            LIMIT 1
            """)
        statement = select
        let handle = select.sqliteStatement
        defer { sqlite3_reset(handle) }
        sqlite3_bind_int64(handle, 1, key.entity)
        sqlite3_bind_int64(handle, 2, key.typeID)
        let code = sqlite3_step(handle)
        if code == SQLITE_DONE { return false }
        guard code == SQLITE_ROW else { throw sqliteError(db) }
        base.removeAll(keepingCapacity: true)
        base.append(contentsOf: columnBlob(handle, 0))
        return true
    }
}

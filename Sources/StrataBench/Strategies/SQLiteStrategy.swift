import Foundation
import GRDBSQLite
import Strata

/// What a user writes without Strata: SQLite straight from the tick loop.
///
/// - `naive`: one autocommit UPDATE per changed component per tick, SQLite's defaults
///   (rollback journal, `synchronous=FULL`): the naive approach the specification starts from.
/// - `tickFull`: one transaction per tick, WAL, `synchronous=FULL`.
/// - `tickNormal`: one transaction per tick, WAL, `synchronous=NORMAL`, automatic
///   checkpoints (GRDB's defaults).
final class SQLiteStrategy: BenchStrategy {
    enum Mode: String {
        case naive
        case tickFull = "tick-full"
        case tickNormal = "tick-normal"
    }

    let mode: Mode
    let log = DurabilityLog()
    let vfs: CountingVFS?
    private var db: OpaquePointer?
    private var update: OpaquePointer?
    private(set) var rowsWritten = 0
    private(set) var persistedPayloadBytes = 0
    private var lastSyncs = 0

    init(_ mode: Mode) throws {
        self.mode = mode
        vfs = try CountingVFS.register(name: "strata-bench-\(mode.rawValue)-\(UUID().uuidString.prefix(8))")
    }

    var name: String { mode.rawValue }

    var summary: String {
        switch mode {
        case .naive: "one autocommit UPDATE per changed component per tick; rollback journal, synchronous=FULL (SQLite defaults)"
        case .tickFull: "one transaction per tick; WAL, synchronous=FULL"
        case .tickNormal: "one transaction per tick; WAL, synchronous=NORMAL, automatic checkpoints (GRDB defaults)"
        }
    }

    func prepare(entities: Int, directory: URL) throws {
        let path = directory.appendingPathComponent("\(mode.rawValue).db").path
        let uri = StoreLocation(path: path, vfs: vfs!.name).uri
        guard sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, nil) == SQLITE_OK else {
            throw StoreError(.open, message: "cannot open", path: path)
        }
        switch mode {
        case .naive: try exec("PRAGMA journal_mode = DELETE; PRAGMA synchronous = FULL")
        case .tickFull: try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL")
        case .tickNormal: try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 1000")
        }
        try exec("CREATE TABLE components (entity INTEGER, type INTEGER, payload BLOB NOT NULL, PRIMARY KEY (entity, type)) WITHOUT ROWID")
        try exec("BEGIN")
        var insert: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO components VALUES (?, ?, ?)", -1, &insert, nil)
        for i in 0 ..< entities {
            for (type, payload) in [(1, BenchPayload.transform(0, Float(i))), (2, BenchPayload.label(entity: i, revision: 0))] {
                sqlite3_bind_int64(insert, 1, Int64(i))
                sqlite3_bind_int64(insert, 2, Int64(type))
                payload.withUnsafeBytes { _ = sqlite3_bind_blob(insert, 3, $0.baseAddress, Int32($0.count), nil) }
                sqlite3_step(insert)
                sqlite3_reset(insert)
            }
        }
        sqlite3_finalize(insert)
        try exec("COMMIT")
        sqlite3_prepare_v3(db, "UPDATE components SET payload = ? WHERE entity = ? AND type = ?", -1,
                           UInt32(SQLITE_PREPARE_PERSISTENT), &update, nil)
        lastSyncs = vfs!.counts.syncs
    }

    func tick(_ tick: BenchTick) throws {
        let perTick = mode != .naive
        if perTick { try exec("BEGIN") }
        for i in 0 ..< tick.moving {
            let (x, y) = tick.position(i)
            try write(entity: tick.mover(i), type: 1, payload: BenchPayload.transform(x, y))
        }
        if let c = tick.criticalEntity {
            try write(entity: c, type: 2, payload: BenchPayload.label(entity: c, revision: tick.index + 1))
        }
        if perTick { try exec("COMMIT") }
        let done = MonotonicClock().now()

        let tiers: [Tier] = (tick.moving > 0 ? [.derived] : []) + (tick.criticalEntity != nil ? [.critical] : [])
        for tier in tiers { log.changed(tier, at: tick.time) }
        let syncs = vfs!.counts.syncs
        let synced = mode != .tickNormal || syncs > lastSyncs   // NORMAL: only a checkpoint syncs
        lastSyncs = syncs
        for tier in Tier.persisted {
            log.crashSafe(tier, at: done, covers: tick.time)
            if synced { log.powerSafe(tier, at: done, covers: tick.time) }
        }
    }

    private func write(entity: Int, type: Int, payload: [UInt8]) throws {
        payload.withUnsafeBytes { _ = sqlite3_bind_blob(update, 1, $0.baseAddress, Int32($0.count), nil) }
        sqlite3_bind_int64(update, 2, Int64(entity))
        sqlite3_bind_int64(update, 3, Int64(type))
        let rc = sqlite3_step(update)
        sqlite3_reset(update)
        guard rc == SQLITE_DONE else { throw StoreError(.write, sqliteCode: rc, message: String(cString: sqlite3_errmsg(db)), path: "") }
        rowsWritten += 1
        persistedPayloadBytes += payload.count
    }

    private func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw StoreError(.write, message: String(cString: sqlite3_errmsg(db)), path: "")
        }
    }

    func finish() throws {}

    func close() throws {
        sqlite3_finalize(update)
        sqlite3_close(db)
    }
}

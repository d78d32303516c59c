import Foundation
import GRDB
import GRDBSQLite
import Logging

/// What `strata inspect` reports about a database file, read without changing it.
///
/// The JSON form (`--json`) is a stable interface for scripts: keys are snake_case
/// and are only ever added, never renamed.
package struct DatabaseInspection: Codable, Sendable, Equatable {
    public var path: String
    /// `empty`, `strata`, `newer_schema` (written by a newer Strata: only the header is
    /// read) or `foreign` (not a Strata document); `document_detail` says why.
    public var document = "strata"
    public var documentDetail: String?
    /// The process that has the document open now, if any (`DocumentLock`).
    public var owner: DocumentOwner?
    public var journalMode: String
    public var pageSize: Int
    public var schemaVersion: Int
    /// Size of the `-wal` file when inspected (0: absent or truncated).
    public var walBytes: Int
    public var entityCount: Int
    /// Components per type name, including types no build registers: what a reload
    /// gives (the base rows with the segment log replayed over them).
    public var components: [String: Int]
    /// Base rows (`components`), all types: what compaction has folded in.
    public var baseComponentRows = 0
    /// The segment log (docs/storage.md): rows, bytes and records not yet compacted.
    public var segments = 0
    public var segmentBytes = 0
    public var segmentRecords = 0
    /// Segment rows that cannot be read (skipped by the reload; compaction sets them aside).
    public var unreadableSegments = 0
    /// Coded records whose base the log no longer has (docs/storage.md, "Coded records"):
    /// skipped, as the reload skips them (those of gone entities among them).
    public var unresolvedRecords = 0
    /// Segment rows compaction could not read and set aside (`segments_set_aside`).
    public var segmentsSetAside = 0
    /// Compaction rounds finished over the file's life, and the steps they took.
    public var compactions = 0
    public var compactionSteps = 0
    /// The document's settings, key → value as written (`b:`, `i:`, `d:`, `s:`, `j:` tags: see ``SettingValue``).
    public var settings: [String: String] = [:]
    /// This replica's node id; operations logged per node; the persisted vector clock
    /// (node → highest contiguous sequence). Node ids in lowercase UUID form.
    public var nodeID: String?
    public var operationLog: [String: Int] = [:]
    public var vectorClock: [String: Int64] = [:]
    /// Rows commits rejected and parked (``RejectedWrite``): in `rejected_writes`, and in
    /// the side file `PATH.rejected`.
    public var rejectedWrites = 0
    /// Rows per kind of data (``DataKind``: every table each kind owns, counted).
    public var rowsByKind: [String: Int] = [:]
    /// The document's world digest (``WorldDigest``): per type and over the replicated
    /// types, comparable with ``World/digest()`` and across devices.
    public var digest: WorldDigest?
    public var rejectedWritesInSideFile = 0
    /// Lines of the side file that do not read as a parked row (torn by a crash mid-append,
    /// or written by a newer build): kept in the file as they are.
    public var unreadableSideFileLines = 0
    /// The clean-shutdown mark: nil if the file has no session row.
    public var cleanShutdown: Bool?
    public var crashCount: Int
    public var cleanShutdownCount: Int
    public var sessionID: String?
    /// Unix milliseconds.
    public var sessionStartedAt: Int64?
    public var sessionEndedAt: Int64?
    /// The file's folder is read-only (read-only media), and SQLite cannot read a WAL
    /// database there without its shared-memory file: the file and its WAL were copied
    /// to a temporary folder and read there.
    public var readFromCopy = false

    /// Reads `path` through a read-only connection (no checkpoint, no recovery writes).
    /// On read-only media, from a copy (``readFromCopy``).
    public static func inspect(path: String) throws -> DatabaseInspection {
        let location = StoreLocation(path: path)
        do {
            return try read(location)
        } catch let error as StoreError where error.sqliteCode.map({ $0 & 0xFF == SQLITE_CANTOPEN || $0 & 0xFF == SQLITE_READONLY }) == true
            && access(URL(fileURLWithPath: location.path).deletingLastPathComponent().path, W_OK) != 0 {
            // A WAL database whose `-shm` file cannot be created: SQLite refuses to open it.
            let fm = FileManager.default
            let folder = fm.temporaryDirectory.appendingPathComponent("strata-inspect-\(UUID().uuidString)")
            try fm.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? fm.removeItem(at: folder) }
            let copy = StoreLocation(path: folder.appendingPathComponent(URL(fileURLWithPath: location.path).lastPathComponent).path)
            do {
                try fm.copyItem(atPath: location.path, toPath: copy.path)
                if fm.fileExists(atPath: location.walPath) { try fm.copyItem(atPath: location.walPath, toPath: copy.walPath) }
            } catch {
                throw StoreError(.read, message: "the folder is read-only, and the file could not be copied to read it: \(error)",
                                 path: location.path)
            }
            var inspection = try read(copy, as: location)
            inspection.readFromCopy = true
            return inspection
        }
    }

    /// Reads `location`, reporting it as `reported` (the original of a copy).
    private static func read(_ location: StoreLocation, as reported: StoreLocation? = nil) throws -> DatabaseInspection {
        let reported = reported ?? location
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: location.path, isDirectory: &isDirectory) else {
            throw StoreError(.open, message: "no database file", path: location.path)
        }
        guard !isDirectory.boolValue else {
            throw StoreError(.open, message: "this is a folder, not a database file", path: location.path)
        }
        let walBytes = location.walBytes
        let before = location.companions
        defer { location.removeCompanionsMadeByReading(before: before) }
        do {
            let queue = try location.readOnlyQueue()
            defer { try? queue.close() }
            return try queue.read { db in
                let kind = try DocumentKind.classify(db)
                var header = DatabaseInspection(
                    path: reported.path,
                    journalMode: try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "unknown",
                    pageSize: try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0,
                    schemaVersion: try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0,
                    walBytes: walBytes, entityCount: 0, components: [:],
                    cleanShutdown: nil, crashCount: 0, cleanShutdownCount: 0)
                header.document = kind.key
                header.owner = DocumentLock.owner(of: reported)
                switch kind {
                case .newerSchema(let why), .foreign(let why):
                    header.documentDetail = why
                    return header   // its tables may not mean what this build thinks
                case .empty, .strata:
                    break
                }
                var componentsByTypeID: [Int64: Int] = [:]
                var entityCount = 0
                // Despawned entities whose rows wait for compaction are left out; spawned
                // ones count.
                let layout = try PendingEntities.layout(db)
                func live(_ column: String) -> String { layout.live(column) }
                if try db.tableExists("components") && db.tableExists("component_types") {
                    for row in try Row.fetchAll(db, sql: """
                        SELECT type_id, count(*) AS n FROM components WHERE \(live("entity_num")) GROUP BY type_id
                        """) {
                        // A type id that is not an integer counts under no type (it cannot name one).
                        guard let typeID = row.value("type_id", as: Int64.self) else { continue }
                        componentsByTypeID[typeID] = row.value("n") ?? 0
                    }
                }
                if try db.tableExists("entities") {
                    entityCount = try Int.fetchOne(db, sql: "SELECT count(*) FROM entities WHERE \(live("num"))") ?? 0
                    entityCount += try PendingEntities.liveSpawnCount(db)
                }
                var inspection = header
                inspection.entityCount = entityCount
                inspection.baseComponentRows = componentsByTypeID.values.reduce(0, +)
                // The newest record of each key in the log (a put's payload, nil for a removal):
                // read once, for the counts and the digest.
                var newest: [SegmentKey: StoredValue?] = [:]
                if try db.tableExists("segments") {
                    newest = try inspection.replaySegments(db, into: &componentsByTypeID)
                }
                let names = try db.tableExists("component_types") ? try ComponentTypeNames.all(db) : [:]
                for (typeID, count) in componentsByTypeID where count > 0 {
                    inspection.components[names[typeID] ?? "#\(typeID)"] = count
                }
                if try db.tableExists("segments_set_aside") {
                    inspection.segmentsSetAside = try Int.fetchOne(db, sql: "SELECT count(*) FROM segments_set_aside") ?? 0
                }
                if try db.tableExists("compaction_state"), let row = try Row.fetchOne(db, sql: "SELECT rounds, steps FROM compaction_state") {
                    inspection.compactions = row.value("rounds") ?? 0
                    inspection.compactionSteps = row.value("steps") ?? 0
                }
                if try db.tableExists("settings") {
                    for row in try Row.fetchAll(db, sql: "SELECT key, value FROM settings") {
                        guard let key = row.value("key", as: String.self) else { continue }
                        inspection.settings[key] = row.value("value") ?? "(not text)"
                    }
                }
                if try db.tableExists("rejected_writes") {
                    inspection.rejectedWrites = try Int.fetchOne(db, sql: "SELECT count(*) FROM rejected_writes") ?? 0
                }
                let sideFile = SideFile(path: reported.rejectedPath).read()
                inspection.rejectedWritesInSideFile = sideFile.rows.count
                inspection.unreadableSideFileLines = sideFile.unreadableLines.count
                inspection.digest = try Self.digest(db, newest: newest)
                for kind in DataKind.allCases {
                    for table in kind.tables where try db.tableExists(table.name) {
                        inspection.rowsByKind[kind.rawValue, default: 0] += try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table.name)") ?? 0
                    }
                }
                if try db.operationLogExists() {
                    try inspection.readOperationLog(db)
                }
                if try db.tableExists("session_state"),
                   let row = try Row.fetchOne(db, sql: "SELECT * FROM session_state WHERE id = 1") {
                    // A mark that does not read is no clean shutdown (the next start checks the file).
                    inspection.cleanShutdown = row.value("clean_shutdown", as: Int.self) == 1
                    inspection.crashCount = row.value("crash_count") ?? 0
                    inspection.cleanShutdownCount = row.value("clean_shutdown_count") ?? 0
                    inspection.sessionID = row.value("session_id", as: Data.self).flatMap { data in
                        data.withUnsafeBytes { EntityID(bytes: $0)?.description }
                    }
                    inspection.sessionStartedAt = row.value("started_at")
                    inspection.sessionEndedAt = row.value("ended_at")
                }
                return inspection
            }
        } catch {
            let wrapped = StoreError(.read, wrapping: error, path: location.path)
            if FileManager.default.fileExists(atPath: location.path + "-journal") {
                throw StoreError(.read, sqliteCode: wrapped.sqliteCode, message: """
                    the file has a hot rollback journal (\(location.path)-journal): a transaction, or the file's \
                    creation, was interrupted by a crash. A read-only inspection cannot roll it back; opening the \
                    document (strata sim, Engine.open) does. (\(wrapped.message))
                    """, path: location.path)
            }
            throw wrapped
        }
    }

    /// Adds what the segment log changes to the base rows' counts: the newest record
    /// of each key, for entities that still exist, puts one in or takes one out. Returns
    /// those records: a put's payload, or nil for a removal.
    private mutating func replaySegments(_ db: Database, into counts: inout [Int64: Int]) throws -> [SegmentKey: StoredValue?] {
        var newest: [SegmentKey: StoredValue?] = [:]
        let outcome = try SegmentReplay.run(db, log: SegmentLog(), logger: Logger(label: "strata.inspect")) { record, _ in
            newest[record.key] = .some(StoredValue(record))
        }
        segments = outcome.rows
        segmentRecords = outcome.records
        unreadableSegments = outcome.unreadableRows
        unresolvedRecords = outcome.unresolvedRecords
        segmentBytes = try Int.fetchOne(db, sql: "SELECT coalesce(sum(length(records)), 0) FROM segments") ?? 0
        // Entities waiting for compaction (`PendingEntities`), read once: a spawn exists, a despawn does not.
        let layout = try PendingEntities.layout(db)
        let despawning = try PendingEntities.despawnNumbers(db)
        let spawning = try layout.spawnRows(asOf: false).map { Set(try EntityNumber.fetchAll(db, sql: "SELECT num FROM (\($0))")) } ?? []
        let entityExists = try db.makeStatement(sql: "SELECT 1 FROM entities WHERE num = ?")
        let baseExists = try db.makeStatement(sql: "SELECT 1 FROM components WHERE entity_num = ? AND type_id = ?")
        for (key, record) in newest where !despawning.contains(key.entity) {
            guard try spawning.contains(key.entity) || Row.fetchOne(entityExists, arguments: [key.entity]) != nil else { continue }
            let isPut = record != nil
            let inBase = try Row.fetchOne(baseExists, arguments: [key.entity, key.typeID]) != nil
            if isPut && !inBase { counts[key.typeID, default: 0] += 1 }
            if !isPut && inBase { counts[key.typeID, default: 0] -= 1 }
        }
        return newest
    }

    private mutating func readOperationLog(_ db: Database) throws {
        // A node that is NULL (this replica's operations while its `replica` row is missing)
        // or not an id is named as what it is, never a trap.
        func node(_ row: Row) -> String {
            guard let data = row.value("node", as: Data.self) else { return "(no node: the replica row is missing)" }
            return data.withUnsafeBytes { NodeID(bytes: $0)?.description } ?? data.map { String(format: "%02x", $0) }.joined()
        }
        nodeID = try Row.fetchOne(db, sql: "SELECT node_id AS node FROM replica WHERE id = 1").map(node)
        for row in try Row.fetchAll(db, sql: "SELECT node, count(*) AS n FROM operation_log GROUP BY node") {
            operationLog[node(row), default: 0] += row.value("n") ?? 0
        }
        for row in try Row.fetchAll(db, sql: "SELECT node, seq FROM vector_clock") {
            vectorClock[node(row)] = row.value("seq") ?? 0
        }
    }

}

extension DatabaseInspection {
    /// Nothing read: a file whose contents could not be read (`strata doctor` goes on without them).
    init(path: String) {
        self.init(path: path, journalMode: "", pageSize: 0, schemaVersion: 0, walBytes: 0, entityCount: 0, components: [:],
                  crashCount: 0, cleanShutdownCount: 0)
    }
}

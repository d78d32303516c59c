import Foundation
import GRDB
import Logging

/// What a salvage copied out of a corrupt file, per table, and what it could not read.
public struct SalvageReport: Sendable, Equatable {
    /// Rows copied into the new document, per table.
    public var rows: [String: Int] = [:]
    /// Ranges of keys skipped because their pages did not read, per table (each range is
    /// the rows of one or more damaged pages), and rows that did not read on their own.
    public var skipped: [String: Int] = [:]
    /// Keys in the ranges skipped, per integer-keyed table (the operation log's: sequences):
    /// at most that many rows were lost there (exactly, where keys are dense, as entity
    /// numbers and sequences are).
    public var lostAtMost: [String: Int64] = [:]
    /// Tables that could not be read at all, or only up to a damaged page (the rest is lost).
    public var unreadable: [String] = []
    /// Crashes and clean shutdowns the set-aside file had counted, carried over (its
    /// corruption counts as one crash more).
    public var carriedCrashes = 0
    public var carriedCleanShutdowns = 0

    public var description: String {
        let copied = rows.sorted { $0.key < $1.key }.filter { $0.value > 0 }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        var text = "salvaged \(copied.isEmpty ? "nothing" : copied)"
        let skips = skipped.sorted { $0.key < $1.key }.map { "\($0.value) in \($0.key)" }.joined(separator: ", ")
        if !skips.isEmpty { text += "; skipped unreadable rows or ranges: \(skips)" }
        let lost = lostAtMost.sorted { $0.key < $1.key }.map { "\($0.value) in \($0.key)" }.joined(separator: ", ")
        if !lost.isEmpty { text += "; rows lost, at most: \(lost)" }
        if !unreadable.isEmpty { text += "; unreadable past a damaged page: \(unreadable.joined(separator: ", "))" }
        return text
    }
}

/// Copies whatever still reads from a corrupt document into the new one that replaced it,
/// before the world is rebuilt from the new one (so the world gets it back).
///
/// Tables keyed by an integer (entity numbers, type ids, segment ids) are read in key
/// order a batch at a time; when a read fails, the salvage finds the first key past the
/// damage (probing forward, then bisecting: a seek fails exactly while it lands on a
/// damaged page) and goes on from there, so one bad page costs its own rows only. The
/// operation log the same way, one node's sequence at a time. The small tables keyed
/// otherwise (settings, acknowledgements, floors) are read in key order up to a damaged
/// page and backwards from their end down to it. Entity numbers,
/// type ids and segment ids are kept, so the segment log's records still point at the
/// right entities and types.
/// A read in the salvage met a damaged page.
private enum SalvageProbe: Error { case damaged }

enum Salvage {
    /// Integer-keyed tables, in the order their rows may refer to each other.
    static let keyed: [(table: String, key: String)] = [
        ("component_types", "id"), ("entities", "num"), ("components", "entity_num"), ("segments", "id"),
        ("rejected_writes", "id"), ("jobs", "id"), ("assets", "id"), ("sync_failures", "seq"), ("segments_set_aside", "id"),
    ]
    /// Read from each end up to a damaged page.
    static let scanned = ["settings", "replica", "peer_acks", "operation_floor", "asset_trash", "sync_state"]

    static func run(from corruptPath: String, into store: Store, logger: Logger) -> SalvageReport {
        var report = SalvageReport()
        withSource(corruptPath, into: store, &report) { source, report in
            for (table, key) in keyed { copyKeyed(table, key: key, from: source, into: store, &report) }
            for table in scanned { copyScanned(table, from: source, into: store, &report) }
            copyOperationLog(from: source, into: store, &report)
            carryCounters(from: source, into: store, corruptionCounted: true, &report)
            dropOrphans(store, &report)
        }
        logger.notice("salvage of \(corruptPath): \(report.description)")
        return report
    }

    /// For a file found corrupt while running, whose world the engine still holds
    /// (`Engine+StoreReplacement.swift`): everything but the world. The component type
    /// ids (kept, so the rows of types this build does not register keep theirs), the
    /// parked rows, the settings and the operation log's tables, and the session counters
    /// (a corruption while running is not a crash), the jobs and the assets' rows. Then the
    /// engine writes the world, ``copyForeignComponents(from:into:registered:logger:_:)``
    /// the rest, and ``dropOrphans(_:_:)`` what belonged to entities the world no longer has.
    static func copyHistory(from corruptPath: String, into store: Store, logger: Logger) -> SalvageReport {
        var report = SalvageReport()
        withSource(corruptPath, into: store, &report) { source, report in
            for (table, key) in keyed where ["component_types", "rejected_writes", "jobs", "assets", "sync_failures", "segments_set_aside"].contains(table) {
                copyKeyed(table, key: key, from: source, into: store, &report)
            }
            for table in scanned { copyScanned(table, from: source, into: store, &report) }
            copyOperationLog(from: source, into: store, &report)
            carryCounters(from: source, into: store, corruptionCounted: false, &report)
        }
        return report
    }

    /// The components of types the world does not register (the world cannot write them:
    /// it never loaded them), for the entities the new file has; after the world is
    /// written. Their base rows, then their newest records in the segment log folded over
    /// them (a removal deletes the row), all as base rows: the log is not copied, since it
    /// also holds the world's older values, which would replay over the new ones.
    static func copyForeignComponents(from corruptPath: String, into store: Store, registered: Set<String>, logger: Logger,
                                      _ report: inout SalvageReport) {
        withSource(corruptPath, into: store, &report) { source, report in
            let names = { (queue: DatabaseQueue) in
                (try? queue.read { db in try Row.fetchAll(db, sql: "SELECT id, name FROM component_types") })?
                    .reduce(into: [Int64: String]()) { $0[$1["id"]] = $1["name"] } ?? [:]
            }
            let ours = (try? store.queue.read { db in try Row.fetchAll(db, sql: "SELECT id, name FROM component_types") })?
                .reduce(into: [Int64: String]()) { $0[$1["id"]] = $1["name"] } ?? [:]
            // Same id, same name in both files: the rows can keep their type_id.
            let foreign = names(source).filter { !registered.contains($0.value) && ours[$0.key] == $0.value }.keys.sorted()
            guard !foreign.isEmpty else { return }
            copyKeyed("components", key: "entity_num", from: source, into: store, &report,
                      filter: "type_id IN (\(foreign.map(String.init).joined(separator: ", ")))", conflict: "OR IGNORE")
            foldForeignRecords(Set(foreign), from: source, into: store, logger: logger, &report)
        }
        logger.notice("salvage of \(corruptPath): \(report.description)")
    }

    /// The newest segment-log record of each key of the `foreign` types, over the base
    /// rows. Read in commit order up to the first damaged page (later records are lost:
    /// reported as unreadable).
    private static func foldForeignRecords(_ foreign: Set<Int64>, from source: DatabaseQueue, into store: Store, logger: Logger,
                                           _ report: inout SalvageReport) {
        var newest: [SegmentKey: (version: Int, payload: [UInt8])?] = [:]
        do {
            try source.read { db in
                _ = try SegmentReplay.run(db, log: SegmentLog(), logger: logger) { record, _ in
                    guard foreign.contains(record.key.typeID) else { return }
                    newest[record.key] = record.version.map { ($0, Array(record.payload)) }
                }
            }
        } catch {
            report.unreadable.append("segments (of unregistered types)")
        }
        guard !newest.isEmpty else { return }
        let now = unixMilliseconds()
        do {
            try store.queue.write { db in
                for (key, value) in newest {
                    if let value {
                        try db.execute(sql: """
                            INSERT INTO components (entity_num, type_id, version, payload, updated_at) VALUES (?, ?, ?, ?, ?)
                            ON CONFLICT (entity_num, type_id) DO UPDATE SET version = excluded.version, payload = excluded.payload,
                            updated_at = excluded.updated_at
                            """, arguments: [key.entity, key.typeID, value.version, Data(value.payload), now])
                    } else {
                        try db.execute(sql: "DELETE FROM components WHERE entity_num = ? AND type_id = ?", arguments: [key.entity, key.typeID])
                    }
                }
            }
            report.rows["segment records (unregistered types)", default: 0] += newest.count
        } catch {
            report.unreadable.append("segments (of unregistered types; not written: \(error))")
        }
    }

    /// Opens the corrupt file read-only for `body`, with foreign keys off in `store`: rows
    /// arrive in table order, and a component whose entity's page was lost has no parent
    /// (``dropOrphans(_:_:)`` deals with those once everything is in). Foreign keys are on again afterwards.
    private static func withSource(_ corruptPath: String, into store: Store, _ report: inout SalvageReport,
                                   _ body: (DatabaseQueue, inout SalvageReport) -> Void) {
        let source: DatabaseQueue
        do {
            source = try StoreLocation(path: corruptPath).readOnlyQueue()
        } catch {
            report.unreadable.append("the whole file (\(error))")
            return
        }
        defer { try? source.close() }
        try? store.queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA foreign_keys = OFF") }
        // Back on whatever the body did: the writer's cascades depend on it.
        defer { try? store.queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA foreign_keys = ON") } }
        body(source, &report)
    }

    /// Deletes the components, jobs and assets' rows whose entity did not make it (an asset's
    /// file goes to the trash with its row).
    static func dropOrphans(_ store: Store, _ report: inout SalvageReport) {
        do {
            try store.queue.writeWithoutTransaction { db in
                for table in ["components", "jobs", "assets"] where try db.tableExists(table) {
                    try db.execute(sql: "DELETE FROM \(table) WHERE entity_num NOT IN (SELECT num FROM entities)")
                    let orphans = db.changesCount
                    if orphans > 0 {
                        report.rows[table, default: 0] -= orphans
                        report.skipped["\(table) (entity lost)", default: 0] += orphans
                    }
                }
            }
        } catch {
            report.unreadable.append("the foreign-key pass (\(error))")
        }
    }

    /// The session counters: the new file goes on counting from the old one's.
    private static func carryCounters(from source: DatabaseQueue, into store: Store, corruptionCounted: Bool,
                                      _ report: inout SalvageReport) {
        guard let row = try? source.read({ db in
            try Row.fetchOne(db, sql: "SELECT crash_count, clean_shutdown_count FROM session_state WHERE id = 1")
        }) else { return }
        report.carriedCrashes = (row["crash_count"] as Int? ?? 0) + (corruptionCounted ? 1 : 0)
        report.carriedCleanShutdowns = row["clean_shutdown_count"] as Int? ?? 0
        try? store.queue.write { db in
            try db.execute(sql: "UPDATE session_state SET crash_count = crash_count + ?, clean_shutdown_count = clean_shutdown_count + ? WHERE id = 1",
                           arguments: [report.carriedCrashes, report.carriedCleanShutdowns])
        }
    }

    /// The columns both files have for `table` (nil if the source lacks it).
    private static func columns(_ table: String, _ source: DatabaseQueue, _ store: Store) -> [String]? {
        guard let from = try? source.read({ db in try db.tableExists(table) ? try db.columns(in: table).map(\.name) : nil }),
              let to = try? store.queue.read({ db in try db.columns(in: table).map(\.name) })
        else { return nil }
        let shared = from.filter(to.contains)
        return shared.isEmpty ? nil : shared
    }

    private static func insert(_ rows: [Row], _ table: String, _ columns: [String], into store: Store,
                               conflict: String = "OR REPLACE") throws {
        guard !rows.isEmpty else { return }
        let sql = "INSERT \(conflict) INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
        try store.queue.write { db in
            let statement = try db.cachedStatement(sql: sql)
            for row in rows { try statement.execute(arguments: StatementArguments(columns.map { row[$0] as DatabaseValue })) }
        }
    }

    /// `filter`: an SQL condition the rows copied must meet; `seekFilter`: one the probes
    /// past a damaged page keep to (the leading columns of a composite key, so that a probe
    /// is a seek); `conflict`: what a row whose key is already in `store` does.
    private static func copyKeyed(_ table: String, key: String, from source: DatabaseQueue, into store: Store,
                                  _ report: inout SalvageReport, filter: String = "1", seekFilter: String = "1",
                                  conflict: String = "OR REPLACE") {
        guard let columns = columns(table, source, store) else { return }
        let list = columns.joined(separator: ", ")
        // The table's own B-tree, never an index: with statistics, SQLite may scan a small
        // table's unique index and sort, and a damaged index page would hide intact rows.
        // (The operation log's seeks go through its (node, seq) index on purpose.)
        let from = seekFilter == "1" ? "\(table) NOT INDEXED" : table
        func insert(_ rows: [Row], _ table: String, _ columns: [String], into store: Store) throws {
            try Salvage.insert(rows, table, columns, into: store, conflict: conflict)
        }
        // Whether a seek to `k` reads (nil: it fails; .some(nil): nothing at or after k).
        func firstKey(from k: Int64) -> Int64?? {
            do { return .some(try source.read { try Int64.fetchOne($0, sql: "SELECT \(key) FROM \(from) WHERE \(seekFilter) AND \(key) >= ? ORDER BY \(key) LIMIT 1", arguments: [k]) }) }
            catch { return nil }
        }
        var next = Int64.min
        var copied = 0
        while true {
            // Row by row, so that what reads before a damaged page is kept (in a table without
            // rowid, that includes the row dividing it from the previous leaf, in their parent).
            var rows: [Row] = []
            do {
                try source.read { db in
                    let cursor = try Row.fetchCursor(db, sql: "SELECT \(list) FROM \(from) WHERE \(key) >= ? AND (\(filter)) ORDER BY \(key) LIMIT 256", arguments: [next])
                    while let row = try cursor.next() { rows.append(row.copy()) }
                }
            } catch {
                if let last = rows.last?[key] as Int64?, (try? insert(rows, table, columns, into: store)) != nil {
                    copied += rows.count
                    next = last &+ 1
                    if next == Int64.min { break }
                }
                rows = []
            }
            do {
                if rows.isEmpty, firstKey(from: next) != .some(nil) { throw SalvageProbe.damaged }
                guard let last = rows.last?[key] as Int64? else { break }
                if rows.count == 256 {
                    if rows.first?[key] as Int64? == last {
                        // One key fills the batch (an entity's many components): take all of it.
                        rows = try source.read { db in try Row.fetchAll(db, sql: "SELECT \(list) FROM \(from) WHERE \(key) = ? AND (\(filter))", arguments: [last]) }
                    } else {
                        rows.removeAll { $0[key] as Int64? == last }   // the last key's rows go in the next batch, whole
                    }
                }
                try insert(rows, table, columns, into: store)
                copied += rows.count
                next = (rows.last![key] as Int64) + 1
                if next == Int64.min { break }
            } catch {
                // A damaged page somewhere in that batch. Go a key at a time while seeks read;
                // a key whose rows do not read is skipped; a seek that fails is on a damaged page.
                switch firstKey(from: next) {
                case .some(.none):
                    break   // nothing at or after `next`
                case .some(.some(let k)):
                    if let rows = try? source.read({ db in try Row.fetchAll(db, sql: "SELECT \(list) FROM \(from) WHERE \(key) = ? AND (\(filter))", arguments: [k]) }),
                       (try? insert(rows, table, columns, into: store)) != nil {
                        copied += rows.count
                    } else {
                        // Its key is found (an index reads) but its row does not: one row lost, known.
                        report.skipped[table, default: 0] += 1
                        report.lostAtMost[table, default: 0] += 1
                    }
                    next = k &+ 1
                    continue
                case .none:
                    // Probe forward for a key whose seek reads, then bisect back to the first one.
                    // The keys here are numbers from 1 up: a probe from the start of the table
                    // (its first leaf damaged) starts at 0, not at Int64.min, whose doublings
                    // would never reach them.
                    next = max(next, 0)
                    let base = next
                    var step: Int64 = 1
                    var readable: Int64?
                    while step < (1 << 62) {
                        let probe = base &+ step
                        if probe < base { break }
                        if firstKey(from: probe) != nil { readable = probe; break }
                        step *= 2
                    }
                    guard var high = readable else {
                        report.unreadable.append(table)
                        break
                    }
                    var low = step == 1 ? base : base &+ step / 2
                    while high - low > 1 {
                        let middle = low + (high - low) / 2
                        if firstKey(from: middle) != nil { high = middle } else { low = middle }
                    }
                    report.skipped[table, default: 0] += 1
                    report.lostAtMost[table, default: 0] += high &- next
                    // In a table without rowid, the row dividing two leaves sits in their parent
                    // page: a seek to it goes on down to the damaged leaf and fails, but a cursor
                    // walking back from `high` reads it before it reaches the damage.
                    var dividers: [Row] = []
                    try? source.read { db in
                        let cursor = try Row.fetchCursor(db, sql: "SELECT \(list) FROM \(from) WHERE \(seekFilter) AND \(key) < ? AND \(key) >= ? AND (\(filter)) ORDER BY \(key) DESC", arguments: [high, next])
                        while let row = try cursor.next() { dividers.append(row.copy()) }
                    }
                    if (try? insert(dividers, table, columns, into: store)) != nil {
                        copied += dividers.count
                        report.lostAtMost[table, default: 0] -= Int64(Set(dividers.compactMap { $0[key] as Int64? }).count)
                    }
                    next = high
                    continue
                }
                break
            }
        }
        report.rows[table, default: 0] += copied
    }

    /// The operation log, keyed by (node, seq): each node's sequence is copied like an
    /// integer-keyed table (past damaged pages). The nodes come from every table that names
    /// them, and from the log itself read from both ends up to a damaged page: a node named
    /// nowhere else whose every operation sits between two damaged pages is the one thing
    /// lost unseen.
    private static func copyOperationLog(from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        guard columns("operation_log", source, store) != nil else { return }
        var nodes = Set<Data>()
        for sql in ["SELECT node FROM vector_clock", "SELECT node FROM operation_floor", "SELECT node FROM peer_acks",
                    "SELECT node_id FROM replica", "SELECT DISTINCT node FROM operation_log ORDER BY node",
                    "SELECT DISTINCT node FROM operation_log ORDER BY node DESC"] {
            try? source.read { db in
                let cursor = try Data.fetchCursor(db, sql: sql)
                while let node = try cursor.next() { nodes.insert(node) }
            }
        }
        for node in nodes.sorted(by: { $0.lexicographicallyPrecedes($1) }) where node.count == 16 {
            let hex = node.map { String(format: "%02x", $0) }.joined()
            copyKeyed("operation_log", key: "seq", from: source, into: store, &report, filter: "node = x'\(hex)'", seekFilter: "node = x'\(hex)'")
        }
        if report.rows["operation_log"] == nil { report.rows["operation_log"] = 0 }
    }

    /// A table keyed otherwise (text, blobs): read in key order up to a damaged page, then
    /// backwards from its end down to it, so that one damaged page costs its own rows only
    /// (with more than one, the rows between the first and the last are lost too).
    private static func copyScanned(_ table: String, from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        guard let columns = columns(table, source, store) else { return }
        let list = columns.joined(separator: ", ")
        let key = ((try? source.read { db in try db.primaryKey(table).columns }) ?? []).joined(separator: ", ")
        var rows: [Row] = []
        func scan(_ order: String) throws {
            try source.read { db in
                let cursor = try Row.fetchCursor(db, sql: "SELECT \(list) FROM \(table)" + (key.isEmpty ? "" : " ORDER BY \(order)"))
                while let row = try cursor.next() { rows.append(row.copy()) }
            }
        }
        do {
            try scan(key)
        } catch {
            let before = rows.count
            let descending = key.split(separator: ",").map { "\($0.trimmingCharacters(in: .whitespaces)) DESC" }.joined(separator: ", ")
            do {
                if !key.isEmpty { try scan(descending) }
            } catch {}
            if rows.count > before {
                report.skipped[table, default: 0] += 1
            } else {
                report.unreadable.append(table)
            }
        }
        do {
            try insert(rows, table, columns, into: store)
            report.rows[table] = rows.count
        } catch {
            report.unreadable.append("\(table) (not written: \(error))")
        }
    }
}

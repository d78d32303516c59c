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
/// small tables keyed otherwise are read until their first damaged page. Entity numbers,
/// type ids and segment ids are kept, so the segment log's records still point at the
/// right entities and types.
enum Salvage {
    /// Integer-keyed tables, in the order their rows may refer to each other.
    static let keyed: [(table: String, key: String)] = [
        ("component_types", "id"), ("entities", "num"), ("components", "entity_num"), ("segments", "id"),
        ("rejected_writes", "id"),
    ]
    /// Read from the start until a damaged page.
    static let scanned = ["settings", "replica", "operation_log", "peer_acks", "operation_floor"]

    static func run(from corruptPath: String, into store: Store, logger: Logger) -> SalvageReport {
        var report = SalvageReport()
        var configuration = Configuration()
        configuration.readonly = true
        let source: DatabaseQueue
        do {
            source = try DatabaseQueue(path: StoreLocation(path: corruptPath).uri, configuration: configuration)
        } catch {
            report.unreadable.append("the whole file (\(error))")
            return report
        }
        defer { try? source.close() }
        // Rows arrive in table order, and a component whose entity's page was lost has no
        // parent: foreign keys are checked once everything is in, and such rows dropped.
        try? store.queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA foreign_keys = OFF") }
        for (table, key) in keyed { copyKeyed(table, key: key, from: source, into: store, &report) }
        for table in scanned { copyScanned(table, from: source, into: store, &report) }
        carryCounters(from: source, into: store, &report)
        do {
            try store.queue.writeWithoutTransaction { db in
                try db.execute(sql: "DELETE FROM components WHERE entity_num NOT IN (SELECT num FROM entities)")
                let orphans = db.changesCount
                if orphans > 0 {
                    report.rows["components", default: 0] -= orphans
                    report.skipped["components (entity lost)", default: 0] += orphans
                }
                try db.execute(sql: "PRAGMA foreign_keys = ON")
            }
        } catch {
            report.unreadable.append("the foreign-key pass (\(error))")
        }
        logger.notice("salvage of \(corruptPath): \(report.description)")
        return report
    }

    /// The session counters: the new file goes on counting from the old one's.
    private static func carryCounters(from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        guard let row = try? source.read({ db in
            try Row.fetchOne(db, sql: "SELECT crash_count, clean_shutdown_count FROM session_state WHERE id = 1")
        }) else { return }
        report.carriedCrashes = (row["crash_count"] as Int? ?? 0) + 1
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

    private static func insert(_ rows: [Row], _ table: String, _ columns: [String], into store: Store) throws {
        guard !rows.isEmpty else { return }
        let sql = "INSERT OR REPLACE INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
        try store.queue.write { db in
            let statement = try db.cachedStatement(sql: sql)
            for row in rows { try statement.execute(arguments: StatementArguments(columns.map { row[$0] as DatabaseValue })) }
        }
    }

    private static func copyKeyed(_ table: String, key: String, from source: DatabaseQueue, into store: Store,
                                  _ report: inout SalvageReport) {
        guard let columns = columns(table, source, store) else { return }
        let list = columns.joined(separator: ", ")
        // Whether a seek to `k` reads (nil: it fails; .some(nil): nothing at or after k).
        func firstKey(from k: Int64) -> Int64?? {
            do { return .some(try source.read { try Int64.fetchOne($0, sql: "SELECT \(key) FROM \(table) WHERE \(key) >= ? ORDER BY \(key) LIMIT 1", arguments: [k]) }) }
            catch { return nil }
        }
        var next = Int64.min
        var copied = 0
        while true {
            do {
                var rows = try source.read { db in
                    try Row.fetchAll(db, sql: "SELECT \(list) FROM \(table) WHERE \(key) >= ? ORDER BY \(key) LIMIT 256", arguments: [next])
                }
                guard let last = rows.last?[key] as Int64? else { break }
                if rows.count == 256 {
                    if rows.first?[key] as Int64? == last {
                        // One key fills the batch (an entity's many components): take all of it.
                        rows = try source.read { db in try Row.fetchAll(db, sql: "SELECT \(list) FROM \(table) WHERE \(key) = ?", arguments: [last]) }
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
                    if let rows = try? source.read({ db in try Row.fetchAll(db, sql: "SELECT \(list) FROM \(table) WHERE \(key) = ?", arguments: [k]) }),
                       (try? insert(rows, table, columns, into: store)) != nil {
                        copied += rows.count
                    } else {
                        report.skipped[table, default: 0] += 1
                    }
                    next = k &+ 1
                    continue
                case .none:
                    // Probe forward for a key whose seek reads, then bisect back to the first one.
                    var step: Int64 = 1
                    var readable: Int64?
                    while step < (1 << 40) {
                        let probe = next &+ step
                        if probe < next { break }
                        if firstKey(from: probe) != nil { readable = probe; break }
                        step *= 2
                    }
                    guard var high = readable else {
                        report.unreadable.append(table)
                        break
                    }
                    var low = step == 1 ? next : next &+ step / 2
                    while high - low > 1 {
                        let middle = low + (high - low) / 2
                        if firstKey(from: middle) != nil { high = middle } else { low = middle }
                    }
                    report.skipped[table, default: 0] += 1
                    next = high
                    continue
                }
                break
            }
        }
        report.rows[table] = copied
    }

    private static func copyScanned(_ table: String, from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        guard let columns = columns(table, source, store) else { return }
        var rows: [Row] = []
        do {
            try source.read { db in
                let cursor = try Row.fetchCursor(db, sql: "SELECT \(columns.joined(separator: ", ")) FROM \(table)")
                while let row = try cursor.next() { rows.append(row.copy()) }
            }
        } catch {
            report.unreadable.append(table)
        }
        do {
            try insert(rows, table, columns, into: store)
            report.rows[table] = rows.count
        } catch {
            report.unreadable.append("\(table) (not written: \(error))")
        }
    }
}

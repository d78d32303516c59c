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
    /// Rows that read but that the new file refused (a value the damage changed fails a
    /// constraint), per table: parked in `rejected_writes` as they read
    /// (``RejectedWrite/Kind/salvagedRow``), not copied and not lost.
    public var parked: [String: Int] = [:]
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
        let parkedRows = parked.sorted { $0.key < $1.key }.map { "\($0.value) in \($0.key)" }.joined(separator: ", ")
        if !parkedRows.isEmpty { text += "; read but refused by the new file, parked in rejected_writes: \(parkedRows)" }
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
enum Salvage {
    /// Integer-keyed tables, in the order their rows may refer to each other (``DataKind``).
    static let keyed: [(table: String, key: String)] = DataKind.allTables.compactMap { table in
        if case .keyed(let key) = table.salvage { (table.name, key) } else { nil }
    }
    /// Read from each end up to a damaged page (``DataKind``).
    static let scanned = DataKind.allTables.filter { $0.salvage == .scanned }.map(\.name)

    static func run(from corruptPath: String, into store: Store, logger: Logger) -> SalvageReport {
        var report = SalvageReport()
        withSource(corruptPath, into: store, &report) { source, report in
            for (table, key) in keyed { copyKeyed(table, key: key, from: source, into: store, &report) }
            recoverSegmentPrefixes(from: source, into: store, &report)
            for table in scanned { copyScanned(table, from: source, into: store, &report) }
            copyOperationLog(from: source, into: store, &report)
            carryCounters(from: source, into: store, corruptionCounted: true, &report)
            dropOrphans(store, &report)
            recoverNode(from: source, into: store, &report)
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
            let kept = ["component_types", "rejected_writes", "jobs", "assets", "sync_failures", "segments_set_aside", "local_operations"]
            for (table, key) in keyed where kept.contains(table) {
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
                (try? queue.read { db in try ComponentTypeNames.all(db) }) ?? [:]
            }
            let ours = (try? store.queue.read { db in try ComponentTypeNames.all(db) }) ?? [:]
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
    static func foldForeignRecords(_ foreign: Set<Int64>, from source: DatabaseQueue, into store: Store, logger: Logger,
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
        do {
            try store.queue.write { db in
                for (key, value) in newest {
                    if let value {
                        try db.execute(sql: """
                            INSERT INTO components (entity_num, type_id, version, payload) VALUES (?, ?, ?, ?)
                            ON CONFLICT (entity_num, type_id) DO UPDATE SET version = excluded.version, payload = excluded.payload,
                            updated_at = NULL
                            """, arguments: [key.entity, key.typeID, value.version, Data(value.payload)])
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
    static func withSource(_ corruptPath: String, into store: Store, _ report: inout SalvageReport,
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

    /// The node id in `replica`, which the ids of the entities this replica spawned and of
    /// its operations are made from (schemas 21 and 23). Its row came across with the
    /// scanned tables (and its trigger filled the new file's copy); if it did not, the old
    /// row (if it reads) or the old file's second copy gives it back (`replica_copy`, schema
    /// 25: counted in `rows` under the name of the table it came from). If none can be
    /// written, those entities load with ids made from the new file's node, not the ones
    /// peers know: said in the report, with how many and why.
    static func recoverNode(from source: DatabaseQueue, into store: Store, _ report: inout SalvageReport) {
        func node(_ queue: DatabaseQueue, _ table: String) -> NodeID? {
            (try? queue.read { db in try EntityIDColumn.node(db, in: table) }) ?? nil
        }
        guard node(store.queue, "replica") == nil else { return }   // the row came across
        let old = node(source, "replica")
        let found = old.map { ("replica", $0) } ?? node(source, "replica_copy").map { ("replica_copy", $0) }
        if let (table, id) = found {
            let written = (try? store.queue.write { db in
                try db.execute(sql: "INSERT INTO replica (id, node_id, created_at) VALUES (1, ?, ?)",
                               arguments: [id.withBytes { Data($0) }, unixMilliseconds()])
            }) != nil
            if written {
                report.rows[table, default: 0] += 1
                return
            }
        }
        guard let count = (try? store.queue.read({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM entities WHERE id IS NULL") })) ?? nil,
              count > 0 else { return }
        let why = found == nil ? "replica's node id and its copy" : "replica's node id (it read, but the new file refused it)"
        report.unreadable.append("\(why) (the ids of \(count) entities were made from it: they now load with new ones)")
    }

    /// The session counters: the new file goes on counting from the old one's.
    static func carryCounters(from source: DatabaseQueue, into store: Store, corruptionCounted: Bool,
                                      _ report: inout SalvageReport) {
        guard let row = try? source.read({ db in
            try Row.fetchOne(db, sql: "SELECT crash_count, clean_shutdown_count FROM session_state WHERE id = 1")
        }) else { return }
        report.carriedCrashes = Store.counter(row.value("crash_count", as: Int.self)) + (corruptionCounted ? 1 : 0)
        report.carriedCleanShutdowns = Store.counter(row.value("clean_shutdown_count", as: Int.self))
        try? store.queue.write { db in
            try db.execute(sql: "UPDATE session_state SET crash_count = crash_count + ?, clean_shutdown_count = clean_shutdown_count + ? WHERE id = 1",
                           arguments: [report.carriedCrashes, report.carriedCleanShutdowns])
        }
    }
}

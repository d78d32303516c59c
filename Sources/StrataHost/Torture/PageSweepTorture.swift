import Foundation
import GRDB
import Strata
import StrataCanvas

/// `strata torture --mode pages`: the page sweep. A canvas document of 2000 shapes is made
/// once (`strata sim`, shut down cleanly); then each cycle damages one of its pages in a
/// copy (overwritten with 0xA5, as a bad sector reads) and starts on it twice, as
/// `strata sim` starts: the engine, the thumbnails' catch-up, the canvas, a few ticks, a
/// clean shutdown. Pages are taken evenly over the whole file (every page when the cycles
/// are at least the page count).
///
/// Each cycle checks:
/// - both starts finish (no crash, no error) and the second finds a healthy file;
/// - nothing SQLite can still read is lost: every row of the damaged copy that a point
///   lookup by its key still reads (the oracle: one lookup per row key of the undamaged
///   file) is in the file the first start leaves, except rows of an entity that did not
///   survive (their entity's row was on the damaged page: the salvage drops them, and says so).
///
/// Every start runs the check of the tables it does not read (`start_check_secs` tiny), so
/// damage anywhere is found at the first start.
struct PageSweepTorture {
    let setup: TortureSetup
    let cycles: Int

    static let shapes = 2000

    /// A table's rows by key: the SQL that lists the keys (then the row's entity number,
    /// or NULL), and the point lookup of one whole row (not a key an index covers: the row
    /// itself must read). The vector clock is not among them: it is derived, rebuilt from
    /// the log at every open.
    struct Keyed {
        var table: String
        var keys: String
        var lookup: String
        var keyColumns: Int

        /// The key's column names: the first `keyColumns` the key SQL lists.
        var keyNames: [String] {
            let list = keys.dropFirst("SELECT ".count).components(separatedBy: " FROM ").first ?? ""
            return list.split(separator: ",").prefix(keyColumns).map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    static let tables: [Keyed] = [
        Keyed(table: "entities", keys: "SELECT num, num FROM entities", lookup: "SELECT * FROM entities WHERE num = ?", keyColumns: 1),
        Keyed(table: "pending_entities", keys: "SELECT seq, num FROM pending_entities",
              lookup: "SELECT * FROM pending_entities WHERE seq = ?", keyColumns: 1),
        Keyed(table: "components", keys: "SELECT entity_num, type_id, entity_num FROM components",
              lookup: "SELECT * FROM components WHERE entity_num = ? AND type_id = ?", keyColumns: 2),
        Keyed(table: "segments", keys: "SELECT id, NULL FROM segments", lookup: "SELECT * FROM segments WHERE id = ?", keyColumns: 1),
        Keyed(table: "local_operations", keys: "SELECT seq, NULL FROM local_operations",
              lookup: "SELECT * FROM local_operations WHERE seq = ?", keyColumns: 1),
        Keyed(table: "received_operations", keys: "SELECT node, seq, NULL FROM received_operations",
              lookup: "SELECT * FROM received_operations WHERE node = ? AND seq = ?", keyColumns: 2),
        Keyed(table: "jobs", keys: "SELECT id, entity_num FROM jobs", lookup: "SELECT * FROM jobs WHERE id = ?", keyColumns: 1),
        Keyed(table: "assets", keys: "SELECT id, entity_num FROM assets", lookup: "SELECT * FROM assets WHERE id = ?", keyColumns: 1),
        Keyed(table: "settings", keys: "SELECT key, NULL FROM settings", lookup: "SELECT * FROM settings WHERE key = ?", keyColumns: 1),
    ]

    /// A row's key: its values (for the lookup) and a text that identifies it.
    struct Key {
        var values: [DatabaseValue]
        var identity: String
        /// The entity number it belongs to, if any.
        var entity: String?

        init(_ row: Row, columns: Int) {
            values = (0 ..< columns).map { row.value(at: $0, as: DatabaseValue.self) ?? .null }
            identity = values.map(Self.text).joined(separator: "/")
            entity = row.value(at: columns, as: Int64.self).map(String.init)
        }

        static func text(_ value: DatabaseValue) -> String {
            switch value.storage {
            case .blob(let data): data.map { String(format: "%02x", $0) }.joined()
            case .int64(let v): String(v)
            case .double(let v): String(v)
            case .string(let v): v
            case .null: "NULL"
            }
        }
    }

    func run(progress: (Int, TortureResult) -> Void) throws -> TortureResult {
        var result = TortureResult(mode: "pages", seed: setup.seed)
        let clock = MonotonicClock()
        let started = clock.now()
        let folder = setup.directory.appendingPathComponent("pages").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let original = folder + "/original.db"
        try makeDocument(at: original)
        let (pageCount, pageSize, owners) = try Self.pages(of: original)
        let keys = try Self.keys(in: original)
        let pages = Self.pick(cycles, of: pageCount)
        var config = setup.config
        config.maintenance.startCheckAge = .milliseconds(1)
        config.jobs.workers = 1

        for (cycle, page) in pages.enumerated() {
            let trial = folder + "/trial.db"
            for file in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where file.hasPrefix("trial.db") {
                try? FileManager.default.removeItem(atPath: folder + "/" + file)
            }
            try FileManager.default.copyItem(atPath: original, toPath: trial)
            try Self.damage(page: page, pageSize: pageSize, in: trial)
            result.faults += 1
            let owner = owners[page] ?? "free or unused"
            result.details["page of \(owner)", default: 0] += 1
            let readable = Self.readable(keys, in: trial)
            config.database.path = trial

            // The first start: the damage is found, the file set aside and salvaged.
            var present: [String: Set<String>] = [:]
            var liveEntities: Set<String> = []
            do {
                let engine = try Engine.open(config: config, components: canvasComponents, logger: setup.logger)
                if engine.recovery.setAsideCorruptFile != nil { result.details["set aside and salvaged", default: 0] += 1 }
                (present, liveEntities) = Self.present(in: trial)
                try Self.runLikeTheSim(engine, config: config)
                try engine.shutdown()
            } catch {
                result.fail(.reopen, "page \(page) (\(owner)): the first start failed: \(error)", cycle: cycle + 1)
                result.cycles = cycle + 1
                continue
            }
            // Nothing SQLite could read is lost.
            var outcome = ContractCheck.Outcome()
            for table in Self.tables {
                outcome.checks += 1
                let missing = (readable[table.table] ?? []).filter { key in
                    !(present[table.table]?.contains(key.identity) ?? false) && (key.entity.map { liveEntities.contains($0) } ?? true)
                }
                if !missing.isEmpty {
                    outcome.fail(.criticalLost, "page \(page) (\(owner)): \(missing.count) rows of \(table.table) that SQLite still reads are not in the new file (e.g. \(missing.first?.identity ?? "?"))")
                }
                result.details["rows readable", default: 0] += readable[table.table]?.count ?? 0
            }
            // The second start finds a healthy file.
            do {
                let engine = try Engine.open(config: config, components: canvasComponents, logger: setup.logger)
                outcome.checks += 1
                if engine.recovery.setAsideCorruptFile != nil {
                    outcome.fail(.integrity, "page \(page) (\(owner)): the second start set the file aside again: \(engine.recovery.corruption ?? "")")
                }
                try Self.runLikeTheSim(engine, config: config)
                try engine.shutdown()
            } catch {
                outcome.fail(.reopen, "page \(page) (\(owner)): the second start failed: \(error)")
            }
            if result.absorb(outcome, cycle: cycle + 1) {
                let kept = setup.directory.appendingPathComponent("failed-page-\(page)").path
                try? FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true)
                try? FileManager.default.copyItem(atPath: original, toPath: kept + "/original.db")
                result.keptFiles.append(kept)
            }
            result.cycles = cycle + 1
            progress(cycle + 1, result)
        }
        result.details["pages in the file"] = pageCount
        result.seconds = clock.now().duration(since: started).seconds
        return result
    }

    /// The canvas of 2000 shapes, its strokes, thumbnails, operations and a second device's,
    /// made by `strata sim` and shut down cleanly.
    private func makeDocument(at path: String) throws {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = ["sim", "--db", path, "--entities", String(Self.shapes), "--duration", "6", "--activity", "5",
                           "--seed", String(setup.seed & 0xFFFF), "--log-level", "critical"]
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        child.waitUntilExit()
        guard child.terminationStatus == 0 else { throw TortureError("strata sim could not make the document (status \(child.terminationStatus))") }
    }

    /// What `strata sim` does at its start, and a few ticks.
    private static func runLikeTheSim(_ engine: Engine, config: StrataConfig) throws {
        Thumbnails.start(on: engine, trace: nil)
        Thumbnails.catchUp(engine)
        let scenario = CanvasScenario(engine: engine, targetShapes: shapes, hz: config.simulation.tickHz, seed: 1, trace: nil)
        for _ in 0 ..< 30 {
            scenario.step()
            engine.endTick()
        }
        engine.flushNow()
    }

    /// The page count, page size, and which table or index each page belongs to.
    private static func pages(of path: String) throws -> (Int, Int, [Int: String]) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            let count = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let size = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 1024
            var owners: [Int: String] = [1: "page 1 (header, schema)"]
            for row in try Row.fetchAll(db, sql: "SELECT pageno, name, pagetype FROM dbstat") {
                guard let page = row.value("pageno", as: Int.self) else { continue }
                if page != 1 { owners[page] = "\(row.value("name", as: String.self) ?? "?") (\(row.value("pagetype", as: String.self) ?? "?"))" }
            }
            return (count, size, owners)
        }
    }

    /// `count` pages evenly over `1 … total` (all of them if `count >= total`).
    static func pick(_ count: Int, of total: Int) -> [Int] {
        guard count < total else { return Array(1 ... max(1, total)) }
        return (0 ..< count).map { 1 + $0 * total / count }
    }

    private static func damage(page: Int, pageSize: Int, in path: String) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64((page - 1) * pageSize))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: pageSize))
        try handle.close()
    }

    /// Every row key of the undamaged file, per table.
    private static func keys(in path: String) throws -> [String: [Key]] {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var keys: [String: [Key]] = [:]
            for table in tables where try db.tableExists(table.table) {
                keys[table.table] = try Row.fetchAll(db, sql: table.keys).map { Key($0, columns: table.keyColumns) }
            }
            return keys
        }
    }

    /// Of `keys`, those a point lookup still reads in the damaged file (the oracle).
    private static func readable(_ keys: [String: [Key]], in path: String) -> [String: [Key]] {
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return [:] }
        defer {
            try? queue.close()
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
        }
        var readable: [String: [Key]] = [:]
        for table in tables {
            for key in keys[table.table] ?? [] {
                let found = (try? queue.read { db in
                    try Row.fetchOne(db, sql: table.lookup, arguments: StatementArguments(key.values)) != nil
                }) ?? false
                if found { readable[table.table, default: []].append(key) }
            }
        }
        return readable
    }

    /// The keys the file at `path` holds now, per table, and its entities (by number).
    private static func present(in path: String) -> ([String: Set<String>], Set<String>) {
        var configuration = Configuration()
        configuration.readonly = true
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return ([:], []) }
        defer { try? queue.close() }
        var present: [String: Set<String>] = [:]
        for table in tables {
            let rows = (try? queue.read { db in try Row.fetchAll(db, sql: table.keys) }) ?? []
            present[table.table] = Set(rows.map { Key($0, columns: table.keyColumns).identity })
        }
        let entities = present["entities"] ?? []
        // Rows the salvage read but the new file refused are parked as they read: kept, not lost.
        let parked = (try? queue.read { db in
            try Row.fetchAll(db, sql: "SELECT name, payload FROM rejected_writes WHERE kind = ?",
                             arguments: [RejectedWrite.Kind.salvagedRow.rawValue])
        }) ?? []
        for row in parked {
            guard let name = row.value("name", as: String.self), let table = tables.first(where: { $0.table == name }),
                  let data = row.value("payload", as: Data.self),
                  let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { continue }
            let identity = table.keyNames.map { column in
                switch object[column] {
                case let number as NSNumber: String(number.int64Value)
                case let text as String: text
                default: "NULL"
                }
            }.joined(separator: "/")
            present[name, default: []].insert(identity)
        }
        return (present, entities)
    }
}

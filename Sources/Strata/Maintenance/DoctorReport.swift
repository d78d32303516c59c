import Foundation
import GRDB

/// What `strata doctor` finds in a document, read without changing it: integrity, free
/// pages and fragmentation, the WAL, table sizes, the segment backlog, the outbox, the
/// job queue, parked rows and statistics, each finding with what to do about it.
///
/// The JSON form is a stable interface for scripts (keys snake_case, only ever added).
package struct DoctorReport: Codable, Sendable {
    public struct Finding: Codable, Sendable, Equatable {
        public enum Severity: String, Codable, Sendable, Comparable {
            case info, warning, error
            public static func < (a: Self, b: Self) -> Bool { a.order < b.order }
            private var order: Int { self == .info ? 0 : self == .warning ? 1 : 2 }
        }
        public var severity: Severity
        /// What it is about: `integrity`, `repair`, `values`, `free_pages`, `auto_vacuum`, `wal`, `size`,
        /// `segments`, `outbox`, `jobs`, `rejected_writes`, `statistics`, `owner`.
        public var subject: String
        public var detail: String
        public var recommendation: String
    }

    public var path: String
    /// `PRAGMA integrity_check`: "ok", or the first problems it lists.
    public var integrity: String
    public var pageSize: Int
    public var pages: Int
    public var freePages: Int
    /// Free pages over all pages, 0…1.
    public var fragmentation: Double
    /// `none`, `full` or `incremental`.
    public var autoVacuum: String
    public var fileBytes: Int
    public var walBytes: Int
    /// Bytes per table and index (SQLite's `dbstat`), largest first; empty if the SQLite
    /// build lacks it.
    public var tables: [String: Int]
    /// The same bytes by kind of data (``DataKind``: `world`, `segments`, `operations`, …;
    /// SQLite's own pages under `sqlite`, a table no kind claims under `unknown`).
    public var kinds: [String: Int]
    public var segments: Int
    public var segmentBytes: Int
    public var unreadableSegments: Int
    /// Unreadable segment rows compaction set aside (`segments_set_aside`).
    public var segmentsSetAside: Int
    public var outboxPending: Int?
    public var outboxDeadLetters: Int?
    /// Of the dead letters, those parked because their rows in this device's log do not read
    /// (damaged or gone), not because the server refused them.
    public var outboxUnreadable = 0
    public var jobs: [String: Int]
    /// Age of the oldest job waiting to run, in seconds.
    public var oldestPendingJobSecs: Double?
    public var rejectedWrites: Int
    /// Lines of the side file `PATH.rejected` that do not read as a parked row (kept as they are).
    public var unreadableSideFileLines = 0
    /// Per `table.column`, rows holding a value of another type than the column's (kept; the
    /// engine reads around them): ``valuesOfAnotherType(_:)``.
    public var valuesOfAnotherType: [String: Int] = [:]
    /// Rows in `sqlite_stat1` (0: the planner has no statistics).
    public var statisticsRows: Int
    /// The salvages that made this file, oldest first: where each damaged original was set
    /// aside (and is kept), why, and what the salvage copied (the `repairs` table).
    public var repairs: [RecordedRepair] = []
    /// A repair that was cut short (`PATH.repair` is there): where its original was being
    /// set aside. The next start, or `strata maintain --repair`, finishes it.
    public var unfinishedRepair: String?
    public var findings: [Finding]

    /// A salvage that made the file (``repairs``).
    public struct RecordedRepair: Codable, Sendable, Equatable {
        /// Unix milliseconds.
        public var repairedAt: Int64
        /// Where the damaged original was moved: it is kept there.
        public var setAside: String
        public var cause: String
        /// What the salvage copied and what it could not.
        public var report: String
    }

    /// The most severe finding (`info` if none).
    public var worst: Finding.Severity { findings.map(\.severity).max() ?? .info }

    /// Examines the document at `path` (read-only; a running engine may hold it).
    /// `sizeWarningBytes`: the `[maintenance] size_warning_mb` to judge the size by.
    public static func examine(path: String, sizeWarningBytes: Int = MaintenanceConfig().sizeWarningBytes,
                               now: Date = Date()) throws -> DoctorReport {
        // A repair cut short between moving the original aside and renaming its salvage into
        // place: no file under the name, and the marker says where the original is.
        if !FileManager.default.fileExists(atPath: StoreLocation(path: path).path),
           let original = unfinishedRepair(StoreLocation(path: path)) {
            let missing = StoreError(.corrupt, message: "no file under this name: a repair was cut short before its salvage took the name", path: path)
            var report = damaged(path, missing, problems: [], walBytes: 0)
            report.unfinishedRepair = original
            report.findings = report.judge(sizeWarningBytes: sizeWarningBytes, owner: nil, entities: 0)
            return report
        }
        // A damaged file may fail the inspection's reads: the doctor goes on with what reads.
        var unreadable: String?
        let inspection: DatabaseInspection
        do {
            inspection = try DatabaseInspection.inspect(path: path)
        } catch let error as StoreError where error.isCorruption {
            unreadable = error.message
            inspection = DatabaseInspection(path: path)
        }
        guard inspection.document == "strata" else {
            throw StoreError(.open, message: "not a Strata document this build reads (\(inspection.document): \(inspection.documentDetail ?? ""))", path: path)
        }
        let queue: DatabaseQueue
        let location = StoreLocation(path: path)
        let before = location.companions
        defer { location.removeCompanionsMadeByReading(before: before) }
        do {
            queue = try location.readOnlyQueue()
        } catch {
            let failure = StoreError(.read, wrapping: error, path: path)
            guard failure.isCorruption else { throw failure }
            var report = damaged(path, failure, problems: [], walBytes: inspection.walBytes)
            report.unfinishedRepair = Self.unfinishedRepair(location)
            report.findings = report.judge(sizeWarningBytes: sizeWarningBytes, owner: inspection.owner, entities: 0)
            return report
        }
        defer { try? queue.close() }
        // Outside the read transaction below: a check that fails on a damaged page fails the
        // transaction it runs in.
        var problems = ["the integrity check itself failed: the file is damaged"]
        do {
            problems = try queue.inDatabase { db in try String.fetchAll(db, sql: "PRAGMA integrity_check(20)") }
        } catch {
            problems.append("\(error)")
        }
        var report: DoctorReport
        do {
            report = try queue.read { db -> DoctorReport in
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                let file = try MaintenanceSteps.fileStats(db)
                let (pages, free) = (file.pages, file.freePages)
                let usage = (try? Row.fetchAll(db, sql: """
                    SELECT d.name AS name, m.tbl_name AS owner, SUM(d.pgsize) AS bytes
                    FROM dbstat d LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY d.name
                    """)) ?? []
                let tables = Dictionary(usage.map { row in (row.value("name") ?? "?", row.value("bytes") ?? 0) }, uniquingKeysWith: +)
                let kinds = Dictionary(usage.map { row -> (String, Int) in
                    let name: String = row.value("name") ?? "?", owner: String = row.value("owner") ?? name
                    let kind = owner.hasPrefix("sqlite_") ? "sqlite" : DataKind.owning(table: owner)?.rawValue ?? "unknown"
                    return (kind, row.value("bytes") ?? 0)
                }, uniquingKeysWith: +)
                let jobs = Dictionary(((try? Row.fetchAll(db, sql: "SELECT status, count(*) AS n FROM jobs GROUP BY status")) ?? [])
                    .map { row in (row.value("status") ?? "(unreadable)", row.value("n") ?? 0) }, uniquingKeysWith: +)
                let oldest = try? Int64.fetchOne(db, sql: "SELECT min(created_at) FROM jobs WHERE status IN ('pending', 'failed')")
                let stats = (try? Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_stat1")) ?? 0
                // The outbox of a document that syncs (one that never did has no server to push to).
                let outbox: SyncStatus? = (try? {
                    let node = try Data.fetchOne(db, sql: "SELECT node_id FROM replica WHERE id = 1") ?? Data()
                    return try SyncOutbox.status(db, node: node)
                }()).flatMap { $0.server.isEmpty ? nil : $0 }
                var report = DoctorReport(
                    path: path, integrity: problems == ["ok"] ? "ok" : problems.joined(separator: "; "),
                    pageSize: pageSize, pages: pages, freePages: free,
                    fragmentation: pages == 0 ? 0 : Double(free) / Double(pages),
                    autoVacuum: file.autoVacuumName,
                    fileBytes: pages * pageSize, walBytes: inspection.walBytes, tables: tables, kinds: kinds,
                    segments: inspection.segments, segmentBytes: inspection.segmentBytes,
                    unreadableSegments: inspection.unreadableSegments, segmentsSetAside: inspection.segmentsSetAside,
                    outboxPending: outbox?.pending, outboxDeadLetters: outbox?.deadLetters.count,
                    jobs: jobs, oldestPendingJobSecs: oldest.flatMap { $0 }.map { max(0, now.timeIntervalSince1970 - Double($0) / 1000) },
                    rejectedWrites: inspection.rejectedWrites + inspection.rejectedWritesInSideFile,
                    statisticsRows: stats, findings: [])
                report.outboxUnreadable = outbox?.deadLetters.filter { $0.lastError == SyncOutbox.unreadableError }.count ?? 0
                return report
            }
        } catch {
            let failure = StoreError(.read, wrapping: error, path: path)
            guard failure.isCorruption else { throw failure }
            report = damaged(path, failure, problems: problems, walBytes: inspection.walBytes)
        }
        if let unreadable, report.integrity == "ok" { report.integrity = unreadable }
        report.repairs = (try? queue.read { db in try Repair.recorded(db) }) ?? []
        report.unreadableSideFileLines = inspection.unreadableSideFileLines
        report.valuesOfAnotherType = (try? queue.read { db in Self.valuesOfAnotherType(db) }) ?? [:]
        report.unfinishedRepair = Self.unfinishedRepair(location)
        report.findings = report.judge(sizeWarningBytes: sizeWarningBytes, owner: inspection.owner,
                                       entities: inspection.entityCount)
        return report
    }

    /// Where the original of a repair that was cut short is (its marker's word), or nil.
    static func unfinishedRepair(_ location: StoreLocation) -> String? {
        guard let data = FileManager.default.contents(atPath: location.repairMarkerPath) else { return nil }
        return (try? JSONDecoder().decode(Repair.Marker.self, from: data))?.original ?? "(its marker \(location.repairMarkerPath) does not read)"
    }

    /// The report of a file too damaged (or truncated) to read even the header's figures:
    /// the integrity finding says so, with what to do, instead of a raw SQLite error.
    static func damaged(_ path: String, _ failure: StoreError, problems: [String], walBytes: Int) -> DoctorReport {
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let detail = ([failure.message] + problems.filter { $0 != "ok" }).joined(separator: "; ")
        return DoctorReport(
            path: path, integrity: "the file cannot be read: it is damaged or truncated (\(detail))",
            pageSize: 0, pages: 0, freePages: 0, fragmentation: 0, autoVacuum: "unknown", fileBytes: bytes,
            walBytes: walBytes, tables: [:], kinds: [:], segments: 0, segmentBytes: 0, unreadableSegments: 0, segmentsSetAside: 0,
            outboxPending: nil, outboxDeadLetters: nil, jobs: [:], oldestPendingJobSecs: nil, rejectedWrites: 0,
            statisticsRows: 0, findings: [])
    }

    /// The report for a person.
    public var text: String {
        var lines = ["\(path)"]
        lines.append("integrity        \(integrity)")
        lines.append("size             \(fileBytes) bytes (\(pages) pages of \(pageSize)), WAL \(walBytes) bytes")
        lines.append("free pages       \(freePages) (\(String(format: "%.1f", fragmentation * 100)) %), auto_vacuum \(autoVacuum)")
        lines.append("segments         \(segments) rows, \(segmentBytes) bytes\(unreadableSegments > 0 ? ", \(unreadableSegments) unreadable" : "")\(segmentsSetAside > 0 ? ", \(segmentsSetAside) set aside" : "")")
        if let outboxPending { lines.append("outbox           \(outboxPending) pending, \(outboxDeadLetters ?? 0) dead letters") }
        lines.append("jobs             \(jobs.isEmpty ? "none" : jobs.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))")
        lines.append("rejected writes  \(rejectedWrites)")
        lines.append("statistics       \(statisticsRows) rows in sqlite_stat1")
        if !kinds.isEmpty {
            lines.append("by kind of data  " + kinds.sorted { $0.value > $1.value }
                .map { "\($0.key) \($0.value / 1024) KB" }.joined(separator: ", "))
        }
        if !tables.isEmpty {
            lines.append("largest tables   " + tables.sorted { $0.value > $1.value }.prefix(5)
                .map { "\($0.key) \($0.value / 1024) KB" }.joined(separator: ", "))
        }
        lines.append("")
        if findings.isEmpty {
            lines.append("nothing to do")
        } else {
            for finding in findings.sorted(by: { $0.severity > $1.severity }) {
                lines.append("\(finding.severity.rawValue.uppercased()): \(finding.subject): \(finding.detail)")
                lines.append("    → \(finding.recommendation)")
            }
        }
        return lines.joined(separator: "\n")
    }
}

import Foundation
import GRDB

/// Crash detection through the `session_state` row (the specification, *Crash detection and recovery*).
///
/// States of the mark across a session:
///
///     open ──beginSession──▶ running (clean_shutdown = 0, committed FULL)
///     running ──markCleanShutdown──▶ clean (clean_shutdown = 1, clean_shutdown_count + 1)
///     running ──SIGKILL, power loss, panic──▶ (mark stays 0)
///
/// On the next open, a mark of 0, or no row in a database that has a schema already,
/// means the previous session crashed: `crash_count` is incremented and
/// `PRAGMA quick_check` runs. Both counters persist across sessions.
public struct SessionState: Sendable, Equatable {
    public enum Previous: String, Sendable, Equatable {
        /// A new database: there was no previous session.
        case none
        /// The previous session shut down cleanly.
        case clean
        /// The previous session ended without its clean-shutdown mark.
        case crashed
    }

    public var previous: Previous
    public var sessionID: EntityID
    public var crashCount: Int
    public var cleanShutdownCount: Int
    /// `quick_check`'s verdict after a crash ("ok" or its first problems); nil if not run.
    public var integrity: String?
    /// A clean start checked the tables it does not read (``MaintenanceConfig/startCheckAge``):
    /// `integrity` is that check's verdict.
    public var checkedUnreadTables = false

    public var integrityOK: Bool { integrity == nil || integrity == "ok" }
}

extension Store {
    /// Reads the previous session's mark, counts a crash, and marks this session running.
    /// Runs before the writer starts, on the opening thread.
    /// With `fullCheck`, `PRAGMA integrity_check` runs whatever the previous session's end
    /// (a check while running found damage: ``StoreLocation/verifyMarkerPath``).
    ///
    /// After a clean shutdown, when the file's last check is older than `startCheckAge`
    /// (not zero), `PRAGMA quick_check` runs on the tables the start does not read
    /// (``tablesAStartDoesNotRead``): damage there is found now, not when a job or a sync
    /// needs the page.
    func beginSession(now: Date = Date(), fullCheck: Bool = false, startCheckAge: Duration = .zero) throws -> SessionState {
        do {
            return try queue.writeWithoutTransaction { db in
                let row = try Row.fetchOne(db, sql: "SELECT clean_shutdown, crash_count, clean_shutdown_count, last_check_at FROM session_state WHERE id = 1")
                let nowMs = Int64(now.timeIntervalSince1970 * 1000)
                var state = SessionState(previous: .none, sessionID: EntityID(), crashCount: 0, cleanShutdownCount: 0)
                if let row {
                    // A counter that does not read (another type planted there), or that no run of
                    // sessions could reach, restarts at 0; a mark that does not read is a crash:
                    // the check runs.
                    state.crashCount = Self.counter(row.value("crash_count", as: Int.self))
                    state.cleanShutdownCount = Self.counter(row.value("clean_shutdown_count", as: Int.self))
                    state.previous = (try? row.decode(Int.self, forColumn: "clean_shutdown")) == 1 ? .clean : .crashed
                } else if !isNew {
                    state.previous = .crashed
                }
                if state.previous == .crashed {
                    state.crashCount += 1
                }
                if state.previous == .crashed || fullCheck {
                    let problems = try String.fetchAll(db, sql: fullCheck ? "PRAGMA integrity_check(10)" : "PRAGMA quick_check(10)")
                    state.integrity = problems.joined(separator: "; ")
                } else if state.previous == .clean, startCheckAge > .zero,
                          nowMs - ((try? row?.decode(Int64?.self, forColumn: "last_check_at")) ?? 0) >= Int64(startCheckAge.milliseconds) {
                    var problems: [String] = []
                    for table in Self.tablesAStartDoesNotRead where try db.tableExists(table) {
                        problems += try String.fetchAll(db, sql: "PRAGMA quick_check(\(table))").filter { $0 != "ok" }
                            .map { "\(table): \($0)" }
                    }
                    state.integrity = problems.isEmpty ? "ok" : problems.prefix(10).joined(separator: "; ")
                    state.checkedUnreadTables = true
                }
                let checked = state.integrity == "ok"
                // The running mark must survive power loss, or a crash could go unnoticed.
                try db.committing(.full) {
                    try db.inTransaction {
                        try db.execute(sql: """
                            INSERT INTO session_state (id, clean_shutdown, session_id, started_at, ended_at, crash_count, clean_shutdown_count,
                                                       last_check_at)
                            VALUES (1, 0, ?, ?, NULL, ?, ?, ?)
                            ON CONFLICT (id) DO UPDATE SET clean_shutdown = 0, session_id = excluded.session_id,
                                started_at = excluded.started_at, ended_at = NULL, crash_count = excluded.crash_count,
                                clean_shutdown_count = excluded.clean_shutdown_count,
                                last_check_at = coalesce(excluded.last_check_at, session_state.last_check_at)
                            """, arguments: [state.sessionID.withBytes { Data($0) }, nowMs,
                                             state.crashCount, state.cleanShutdownCount,
                                             checked || state.previous == .none ? nowMs : nil])
                        return .commit
                    }
                }
                return state
            }
        } catch {
            throw StoreError(.read, wrapping: error, path: location.path)
        }
    }
}

extension Store {
    /// A session counter as read: nil, negative or past 2^48 (damage: a million sessions a
    /// second would take nine years to count that far) reads as 0, so that counting on never
    /// overflows.
    static func counter(_ value: Int?) -> Int {
        guard let value, value >= 0, value < 1 << 48 else { return 0 }
        return value
    }

    /// Tables no start reads (the reload reads entities, components, segments, settings,
    /// the operation log and its clock): their damage would wait until a job, an asset or
    /// a sync needs the page. `quick_check(TABLE)` covers a table and its indexes.
    static let tablesAStartDoesNotRead = DataKind.allTables.filter { !$0.readAtStart }.map(\.name)
}

extension Writer {
    /// Sets the clean-shutdown mark, committed with `synchronous=FULL`. Writer thread.
    func markCleanShutdown() throws {
        try store.withConnection { db in
            try db.committing(.full) {
                try db.inTransaction {
                    try db.execute(sql: """
                        UPDATE session_state SET clean_shutdown = 1, ended_at = ?, clean_shutdown_count = clean_shutdown_count + 1
                        WHERE id = 1
                        """, arguments: [Int64(Date().timeIntervalSince1970 * 1000)])
                    return .commit
                }
            }
        }
    }
}

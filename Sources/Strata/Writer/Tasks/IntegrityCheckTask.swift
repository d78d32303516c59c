import Foundation
import GRDB

/// A full check of the file while running. Opening checks only after a crash (a full
/// check of a 1M-entity, 174 MB file takes ~2.5 s), so damage that appears in a file
/// shut down cleanly (an index page, the settings) would otherwise go unnoticed while the
/// engine keeps writing into it. Once a session, when the user is idle on mains power,
/// `PRAGMA integrity_check` runs on a read-only connection and a thread of their own:
/// in WAL mode it never blocks a commit. Its result goes to the metrics
/// (`integrityCheck`); damage is reported like a commit that fails with SQLITE_CORRUPT
/// (the writer stops writing to the file, and the engine replaces it at its next flush:
/// `Engine+StoreReplacement.swift`), and leaves `PATH.verify` first, so that if the
/// process dies before that, the next open runs the full check, sets the file aside and
/// salvages it.
///
/// A writer task whose one step is to start that thread. Writer thread; the check's own
/// thread only reads.
final class IntegrityCheckTask: WriterTask {
    let context: WriterContext
    /// This session's check has started.
    private(set) var started = false

    /// Off for tools and tests that must not start a check of their own.
    let enabled: Bool

    init(_ context: WriterContext, options: Engine.Options) {
        self.context = context
        enabled = options.idleIntegrityCheck
    }

    func stepDue() -> Bool {
        guard enabled, !started, let conditions = context.conditions.current else { return false }
        return conditions.onMains && conditions.idle
    }

    func runStep() {
        started = true
        let (location, metrics, logger, buffer) = (context.store.location, context.metrics, context.logger, context.buffer)
        let thread = Thread {
            let problems: [String]
            var found = true   // false: the check could not run
            do {
                let queue = try StoreLocation(path: location.path).readOnlyQueue()   // the plain VFS: a real read
                defer { try? queue.close() }
                problems = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check(20)") }.filter { $0 != "ok" }
            } catch {
                // SQLite may stop the check itself with SQLITE_CORRUPT: that is damage found too.
                let storeError = StoreError(.read, wrapping: error, path: location.path)
                found = storeError.isCorruption
                problems = [found ? storeError.message : "the check could not run: \(storeError)"]
            }
            // The marker and the report first, then the metrics: whoever sees the result sees them.
            if problems.isEmpty {
                logger.info("integrity check of \(location.path): ok")
                // The whole file passed: the next clean start need not check its unread tables.
                _ = try? WriterLane(buffer: buffer).perform(.normal, timeout: .seconds(30)) { db -> Bool? in
                    try db.execute(sql: "UPDATE session_state SET last_check_at = ? WHERE id = 1", arguments: [unixMilliseconds()])
                    return true
                }
            } else {
                _ = FileManager.default.createFile(atPath: location.verifyMarkerPath, contents: Data(problems.joined(separator: "\n").utf8))
                logger.error("integrity check of \(location.path) found damage (\(problems.prefix(3).joined(separator: "; "))): the file is replaced at the next flush, or at the next open")
            }
            if found && !problems.isEmpty {
                buffer.reportCorruption(StoreError(.corrupt, message: "integrity check failed: \(problems.prefix(3).joined(separator: "; "))",
                                                   path: location.path))
            }
            metrics.update { $0.integrityCheck = problems.isEmpty ? "ok" : problems.joined(separator: "; ") }
        }
        thread.name = "strata.integrity"
        thread.start()
    }
}

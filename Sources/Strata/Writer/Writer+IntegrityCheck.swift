import Foundation
import GRDB

/// A full check of the file while running. Opening checks only after a crash (a full
/// check of a 1M-entity, 174 MB file takes ~2.5 s), so damage that appears in a file
/// shut down cleanly (an index page, the settings) would otherwise go unnoticed while the
/// engine keeps writing into it. Once a session, when the user is idle on mains power,
/// `PRAGMA integrity_check` runs on a read-only connection and a thread of their own:
/// in WAL mode it never blocks a commit. Its result goes to the metrics
/// (`integrityCheck`); damage is logged as an error and leaves `PATH.verify`, so the next
/// open runs the full check, sets the file aside and salvages it.
///
/// Started from the writer thread; the check's own thread only reads.
extension Writer {
    func startIntegrityCheckIfDue() {
        guard settings.idleIntegrityCheck, !integrityCheckStarted,
              let context = controlLock.withLock({ compactionContext }), context.onMains, context.idle
        else { return }
        integrityCheckStarted = true
        let location = store.location
        let metrics = self.metrics
        let logger = self.logger
        let thread = Thread {
            let problems: [String]
            do {
                var configuration = Configuration()
                configuration.readonly = true
                let queue = try DatabaseQueue(path: StoreLocation(path: location.path).uri, configuration: configuration)
                defer { try? queue.close() }
                problems = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check(20)") }.filter { $0 != "ok" }
            } catch {
                problems = ["the check could not run: \(StoreError(.read, wrapping: error, path: location.path))"]
            }
            // The marker first, then the metrics: whoever sees the result sees the marker.
            if problems.isEmpty {
                logger.info("integrity check of \(location.path): ok")
            } else {
                _ = FileManager.default.createFile(atPath: location.verifyMarkerPath, contents: Data(problems.joined(separator: "\n").utf8))
                logger.error("integrity check of \(location.path) found damage (\(problems.prefix(3).joined(separator: "; "))): the next open will set the file aside and salvage it")
            }
            metrics.update { $0.integrityCheck = problems.isEmpty ? "ok" : problems.joined(separator: "; ") }
        }
        thread.name = "strata.integrity"
        thread.start()
    }
}

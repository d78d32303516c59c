import Foundation

/// What `strata doctor` says about what it found: a finding per thing worth knowing, each
/// with its severity and what to do about it. Pure: the report's figures in, findings out.
extension DoctorReport {
    /// A finding per thing worth knowing, with what to do about it.
    func judge(sizeWarningBytes: Int, owner: DocumentOwner?, entities: Int) -> [Finding] {
        var f: [Finding] = []
        func add(_ severity: Finding.Severity, _ subject: String, _ detail: String, _ recommendation: String) {
            f.append(Finding(severity: severity, subject: subject, detail: detail, recommendation: recommendation))
        }
        let mb = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        if integrity != "ok" {
            add(.error, "integrity", "PRAGMA integrity_check: \(integrity)",
                "`strata maintain --repair PATH` (or opening it in the host): the damaged file is set aside, what still reads is salvaged into a new one, and the report says what could not be; nothing is deleted")
        }
        if let unfinishedRepair {
            add(.error, "repair", "a repair of this document was cut short: its damaged original is \(unfinishedRepair)",
                "the next start (or `strata maintain --repair PATH`) finishes it from that original, which a repair only reads")
        }
        for repair in repairs {
            let when = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(repair.repairedAt) / 1000))
            add(.info, "repair", "salvaged on \(when) from the damaged original \(repair.setAside) (\(repair.cause)): \(repair.report)",
                "the original is kept there: once nothing more is wanted from it, it may be deleted")
        }
        if let owner {
            add(.info, "owner", "open now by process \(owner.pid) (\(owner.command))", "the figures may move while it runs")
        }
        let freeBytes = freePages * pageSize
        if freeBytes > 1_048_576 && fragmentation > 0.1 {
            add(.warning, "free_pages", "\(freePages) free pages (\(mb(freeBytes)), \(Int(fragmentation * 100)) % of the file)",
                autoVacuum == "incremental"
                    ? "`strata maintain PATH` returns them to the filesystem (the engine does when idle on mains)"
                    : "`strata maintain PATH --vacuum` rewrites the file once with auto_vacuum=INCREMENTAL and returns them")
        }
        if autoVacuum != "incremental" && autoVacuum != "unknown" {
            add(.info, "auto_vacuum", "auto_vacuum is \(autoVacuum): free pages are never returned on their own (a file made with [database] auto_vacuum = \"none\" or before Strata set it)",
                "`strata maintain PATH --vacuum` once (a full VACUUM: about the file's size in writes)")
        }
        if walBytes > 5 * 1_048_576 {
            add(.warning, "wal", "the WAL holds \(mb(walBytes)) (above the 5 MB limit)",
                "the next open checkpoints it; if an engine runs, a long reader may hold checkpoints back")
        }
        if fileBytes > sizeWarningBytes {
            add(.warning, "size", "the file is \(mb(fileBytes)), past size_warning_mb (\(mb(sizeWarningBytes)))",
                "look at the largest tables below; set [maintenance] keep_dead_jobs_secs / keep_rejected_writes_secs and [operation_log] retention, then `strata maintain PATH`")
        }
        if segmentsSetAside > 0 {
            add(.warning, "segments", "\(segmentsSetAside) segment rows could not be read and were set aside (segments_set_aside, with why): the world never had their changes",
                "`strata doctor PATH --export-set-aside DIR` writes them out (their bytes and why) for a newer build or a person to read")
        }
        if unreadableSegments > 0 {
            add(.error, "segments", "\(unreadableSegments) segment rows cannot be read (the reload skips them; the next compaction sets them aside)",
                "`strata maintain PATH` sets them aside now; nothing is dropped")
        } else if segmentBytes > 16 * 1_048_576 {
            add(.info, "segments", "\(segments) segment rows hold \(mb(segmentBytes)) not yet compacted (the reload replays them)",
                "`strata maintain PATH` folds them (the engine does on mains power)")
        }
        if let dead = outboxDeadLetters, dead > outboxUnreadable {
            add(.warning, "outbox", "\(dead - outboxUnreadable) operations the server refused [sync] max_attempts times (dead letters)",
                "fix the cause on the server, then `strata sync retry PATH`")
        }
        if outboxUnreadable > 0 {
            let one = outboxUnreadable == 1
            add(.error, "outbox", "\(outboxUnreadable) operation\(one ? "" : "s") of this device not pushed: \(one ? "its row" : "their rows") in the log "
                + "\(one ? "does" : "do") not read (damaged) or \(one ? "is" : "are") gone (dead letters)",
                "`strata sync status PATH` lists them; `strata sync retry PATH` reads them again")
        }
        if let pending = outboxPending, pending > 0 {
            add(.info, "outbox", "\(pending) operations not yet pushed to the server", "they go at the next sync session")
        }
        if let dead = jobs["dead"], dead > 0 {
            add(.warning, "jobs", "\(dead) dead jobs (failed their last attempt)", "`strata jobs PATH` shows why; `strata jobs PATH retry ID` runs one again")
        }
        if let age = oldestPendingJobSecs, age > 3600 {
            add(.info, "jobs", "the oldest job waiting to run was enqueued \(Int(age / 3600)) h ago",
                "jobs run while an engine with workers has the document open (or the queue is paused: `strata jobs PATH resume`)")
        }
        if !valuesOfAnotherType.isEmpty {
            let total = valuesOfAnotherType.values.reduce(0, +)
            let places = valuesOfAnotherType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            add(.warning, "values", "\(total) rows hold a value of another type than their column's (\(places)): damage, a hand edit or another tool",
                "they are kept; the engine reads around each where it meets it (a row of its world that does not load is said at the start) and a salvage copies them as they are")
        }
        if unreadableSideFileLines > 0 {
            add(.warning, "rejected_writes", "\(unreadableSideFileLines) lines of PATH.rejected do not read as parked rows (torn by a crash while appended, or written by a newer build): kept in the file as they are",
                "a newer build may read them; `engine.replayRejectedWrites()` keeps them and lists each")
        }
        if rejectedWrites > 0 {
            add(.warning, "rejected_writes", "\(rejectedWrites) rows a commit refused are parked (`strata inspect` lists them)",
                "fix the cause, then `engine.replayRejectedWrites()` puts them back")
        }
        if statisticsRows == 0 && entities > 10_000 {
            add(.info, "statistics", "the query planner has no statistics (sqlite_stat1 is empty)",
                "`strata maintain PATH` runs PRAGMA optimize (the engine does at every clean shutdown)")
        }
        return f
    }
}

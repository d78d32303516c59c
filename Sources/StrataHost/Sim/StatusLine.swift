import Foundation
import Strata

/// The live one-line status of `strata sim` on a terminal, and its closing summary.
struct StatusLine {
    let isTerminal = isatty(STDOUT_FILENO) == 1

    static func megabytes(_ bytes: Int) -> String {
        bytes < 1_048_576 ? String(format: "%.1f KB", Double(bytes) / 1024) : String(format: "%.2f MB", Double(bytes) / 1_048_576)
    }

    /// Redraws the line in place (only on a terminal).
    func draw(engine: Engine, tickRate: Double, ticks: Int) {
        guard isTerminal else { return }
        let m = engine.metrics
        let world = engine.world
        let tier = engine.activity == .idle ? "idle" : engine.powerTier.rawValue
        let line = String(
            format: "tick %5.1f Hz | entities %6d | pending critical %4d derived %5d | flushes %5d (commits %5d, FULL %4d) | WAL %@ | log %@, %d compactions | %@ [%@, derived %.0fs]",
            tickRate, world.entityCount, world.pendingCount(.critical), world.pendingCount(.derived),
            m.flushCount, m.commitCount, m.fullCommitCount, Self.megabytes(m.walSizeBytes),
            Self.megabytes(m.segmentBacklogBytes), m.compactionRounds,
            engine.powerState.description, tier, engine.derivedInterval.seconds)
        let disk = m.lowDiskSpace ? " | DISK LOW (\(Self.megabytes(m.freeDiskBytes ?? 0)) free): derived held" : ""
        let replaced = m.storeReplacements > 0 ? " | CORRUPT FILE REPLACED ×\(m.storeReplacements)" : ""
        writeAll(STDOUT_FILENO, "\r\u{1B}[2K\(line)\(disk)\(replaced)\(Self.sync(engine))")
    }

    /// " | sync online, outbox 3" (nothing without a sync).
    static func sync(_ engine: Engine) -> String {
        guard let sync = engine.sync else { return "" }
        let online = sync.network == .offline ? "OFFLINE (network)" : sync.online ? "online" : "OFFLINE (server)"
        let outbox = sync.outbox(highest: engine.vectorClock[engine.nodeID] ?? 0)
        return " | sync \(online), outbox \(outbox)\(sync.failing > 0 ? ", \(sync.failing) refused" : "")"
            + (sync.catchingUp ? ", catching up: \(sync.catchUpPulled) pulled" : "")
    }

    func clear() {
        guard isTerminal else { return }
        writeAll(STDOUT_FILENO, "\r\u{1B}[2K")
    }

    static func sourceDescription(_ source: PowerReading.Source) -> String {
        switch source {
        case .upower(let version): "(UPower \(version))"
        case .fallback: "(configured fallback)"
        case .unavailable(let reason): "(fallback: \(reason))"
        }
    }

    /// The payload line: bytes written per byte of the host's data first, then what the
    /// engine and other devices added beside it (``PayloadShares``).
    static func payloadLine(_ m: PersistenceMetrics) -> String {
        let shares = PayloadShares(m)
        var line = "  payload      \(megabytes(shares.hostData)) of the host's data (\(megabytes(shares.components)) of components, "
            + "\(megabytes(shares.operations)) of operations logged here, \(megabytes(shares.derivedOperations)) of them derived from synced components)"
        if let vfs = m.vfs {
            line += String(format: "; %.1f bytes written per byte of it", shares.perHostByte(vfs.writeBytes))
        }
        line += "; beside it \(megabytes(shares.stamps)) of the engine's stamps"
        if shares.received > 0 { line += ", \(megabytes(shares.received)) of operations received" }
        if let vfs = m.vfs, shares.total > 0 {
            line += String(format: " (%.1f bytes written per payload byte counting them)", Double(vfs.writeBytes) / Double(shares.total))
        }
        return line
    }

    /// The end-of-run summary.
    static func summary(engine: Engine, ticks: Int, elapsed: Duration, droppedTicks: Int, maxTick: Duration, stopReason: String,
                        pages: (pages: PageWrites, trees: [PageWrites.Tree])? = nil, storageBytes: Int? = nil,
                        start: (opened: Duration, firstTick: Duration?)? = nil) -> String {
        let m = engine.metrics
        let reasons = m.flushesByReason.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        var lines = [
            "strata sim: \(stopReason)",
            String(format: "  ticks        %d in %.1f s (%.1f Hz), slowest tick %.2f ms, %d ticks dropped after stalls",
                   ticks, elapsed.seconds, Double(ticks) / max(elapsed.seconds, 0.001), maxTick.milliseconds, droppedTicks),
            "  world        \(engine.world.entityCount) entities"
                + (start.map { start in
                    String(format: "; the document open %.2f s after the start, the first tick done at %@", start.opened.seconds,
                           (start.firstTick.map { String(format: "%.2f s", $0.seconds) } ?? "none") as NSString)
                } ?? ""),
            "  flushes      \(m.flushCount) (\(reasons.isEmpty ? "none" : reasons)); \(m.mergedBatches) merged while the writer was busy, \(m.writerWakes) woke a parked writer",
            String(format: "  commits      %d (%d with synchronous=FULL), mean %.2f ms, max %.2f ms",
                   m.commitCount, m.fullCommitCount, m.averageCommitDuration.milliseconds, m.maxCommitDuration.milliseconds),
            "  rows         \(m.componentRowsWritten) component writes, \(m.componentRowsDeleted) removals, \(m.entityRowsInserted) entities inserted, \(m.entityRowsDeleted) deleted",
            payloadLine(m),
            "  segment log  \(m.segmentsWritten) rows appended (\(megabytes(m.segmentBytesWritten)) of records); now \(m.segmentBacklogRows) rows, "
                + "\(megabytes(m.segmentBacklogBytes)), \(megabytes(m.segmentLiveBytes)) live"
                + (m.unreadableSegments > 0 ? "; \(m.unreadableSegments) UNREADABLE (skipped; compaction sets them aside)" : "")
                + (m.segmentsSetAside > 0 ? "; \(m.segmentsSetAside) set aside in segments_set_aside" : ""),
            String(format: "  compaction   %d rounds (%@), %d steps, max step %.2f ms, %@ read, %@ rewritten, %d keys folded",
                   m.compactionRounds, (m.compactionsByMethod.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ").nilIfEmpty ?? "none") as NSString,
                   m.compactionSteps, m.maxCompactionStepDuration.milliseconds, megabytes(m.compactionBytesRead) as NSString,
                   megabytes(m.compactionBytesWritten) as NSString, m.compactionKeysFolded),
            "  checkpoints  \(m.checkpointCount) \(m.checkpointsByMode.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")); WAL now \(megabytes(m.walSizeBytes)), peak \(megabytes(m.maxWalSizeBytes))",
            "  failures     \(m.failedCommits) failed commits (retried), \(m.rowsCommittedLate) rows committed late\(m.rowsHeld > 0 ? ", \(m.rowsHeld) held in memory" : ""), \(m.rejectedRows) rows rejected and parked, \(m.lostRows) lost",
            "  disk         \(m.freeDiskBytes.map { megabytes($0) + " free" } ?? "free space unknown")\(m.batchesHeldForDiskSpace > 0 ? ", derived batches held \(m.batchesHeldForDiskSpace) times for space" : "")",
            String(format: "  writer       %.1f ms of CPU", m.writerCPUTime.milliseconds),
            "  sessions     \(m.crashRecoveryCount) crashes, \(m.cleanShutdownCount) clean shutdowns",
            "  power        \(engine.powerState) [\(engine.powerTier.rawValue)] \(sourceDescription(engine.powerReading.source))",
        ]
        if m.jobsNotQueued + m.jobsLost > 0 {
            lines.append("  jobs         \(m.jobsNotQueued) not queued (their entity despawned before they were saved), \(m.jobsLost) lost (each in the log)")
        }
        if let vfs = m.vfs {
            lines.append("  disk         \(vfs.syncs) sync requests (WAL \(vfs.wal.syncs), database \(vfs.mainDatabase.syncs)), "
                + "\(megabytes(vfs.writeBytes)) written in \(vfs.writes) writes, as SQLite asked (counting VFS)"
                + (storageBytes.map { "; \(megabytes($0)) sent to storage (the kernel's count of 4 KiB pages)" } ?? ""))
        }
        if let (pages, trees) = pages {
            lines.append(String(format: "  pages        %.1f per commit (%d commits): ", pages.pagesPerCommit, pages.commits)
                + trees.prefix(12).map(\.summary).joined(separator: ", ")
                + (trees.count > 12 ? ", …" : "") + (pages.dropped > 0 ? "; \(pages.dropped) frames not counted" : ""))
        }
        if m.backupsCompleted + m.backupsFailed > 0 {
            lines.append(String(format: "  backups      %d made and verified, %d failed; longest step %.2f ms",
                                m.backupsCompleted, m.backupsFailed, m.maxBackupStepDuration.milliseconds))
        }
        if let sync = engine.sync {
            lines.append("  sync         \(sync.pushedOperations) operations pushed in \(sync.pushes) pushes (\(sync.duplicatesIgnored) the server had), "
                + "\(sync.pulledOperations) pulled; outbox \(sync.outbox(highest: engine.vectorClock[engine.nodeID] ?? 0)), \(sync.deadLetters) dead letters"
                + (sync.lastError.map { "; last error: \($0)" } ?? ""))
        }
        lines += replicationLines(engine)
        for alert in m.alerts { lines.append("  alert        \(alert)") }
        return lines.joined(separator: "\n")
    }
}

extension StatusLine {
    /// The summary's replicated components: what was logged and applied, the overwrites
    /// between devices, what is held back and why, and this device's clock if it is so
    /// far ahead of the server's that the others hold its edits.
    static func replicationLines(_ engine: Engine) -> [String] {
        let r = engine.replicationStatus
        var lines: [String] = []
        guard r.logged + r.applied + r.superseded + r.afterDespawn + r.held + r.malformed > 0 else { return lines }
        lines.append("  replicated   \(r.logged) operations logged here; of other devices', \(r.applied) applied, \(r.superseded) superseded, "
            + "\(r.afterDespawn) after a despawn, \(r.malformed) malformed; overwrites between devices: \(r.overwrites)")
        if r.held > 0 || !r.heldNow.isEmpty {
            let byReason = { (counts: [String: Int]) in counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") }
            let now = r.heldNow.values.reduce(0, +)
            lines.append("  held back    \(r.held) since the open (\(byReason(r.heldByReason))); \(now) held now"
                + (now > 0 ? " (\(byReason(r.heldNow)))" : ""))
        }
        let limit = engine.config.sync.maxClockAhead
        if let ahead = engine.sync?.secondsAhead(of: limit) {
            lines.append("  clock        \(Int(ahead)) s ahead of the server's, more than max_clock_ahead_secs (\(Int(limit.seconds))): "
                + "the other devices hold this device's edits until their clocks get there")
        }
        return lines
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}

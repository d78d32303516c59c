import GRDB
import GRDBSQLite

extension Writer {
    /// Bytes of WAL content not yet copied into the database, from the WAL hook's
    /// frame count (each frame is a page plus a 24-byte header).
    var pendingWalBytes: Int { Int(walFrames.frames) * (settings.pageSize + 24) }

    /// What the last commit added to the WAL.
    var lastCommitWalBytes: Int { Int(walFrames.lastCommitFrames) * (settings.pageSize + 24) }

    /// Runs the checkpoint ``CheckpointPolicy`` asks for, if any; `forced` asks for one
    /// whatever the interval (after an app transition). Writer thread.
    func checkpointIfNeeded(forced: Bool = false) {
        // A backup is copying the file: a checkpoint would change it under the copy.
        guard !context.checkpoints.held else { return }
        if diskGuard.low && pendingWalBytes > 0 {
            // Below min_free_disk_mb the WAL must not hold space the next commit needs: each
            // commit goes into the file at once and the WAL is truncated (the page cost of a
            // checkpoint per commit, for as long as the disk stays nearly full).
            checkpoint(.truncate)
            return
        }
        let policy = CheckpointPolicy(interval: settings.checkpointInterval, maxWalBytes: maxWalBytes)
        let pending = pendingWalBytes
        let now = clock.now()
        guard let mode = policy.decide(now: now, lastCheckpoint: lastCheckpoint, pendingWalBytes: pending,
                                       lastCommitBytes: lastCommitWalBytes, incompleteStreak: incompleteStreak, forced: forced)
        else { return }
        warnIfTheIntervalCannotHold(now: now, pendingWalBytes: pending, policy: policy, forced: forced)
        checkpoint(mode)
    }

    /// `checkpoint_interval_secs` asks for a checkpoint every so often, `max_wal_size_mb`
    /// bounds the WAL between two: when the WAL fills up well before the interval (at
    /// the observed rate it reaches the limit in less than half of it), the interval
    /// cannot hold, and checkpoints come from the size limit instead. Said once a session,
    /// naming both keys. Writer thread.
    private func warnIfTheIntervalCannotHold(now: Instant, pendingWalBytes: Int, policy: CheckpointPolicy, forced: Bool) {
        guard !forced, !intervalWarningGiven, pendingWalBytes + lastCommitWalBytes >= policy.maxWalBytes else { return }
        let elapsed = now.duration(since: lastCheckpoint)
        guard elapsed < policy.interval / 2, elapsed > .zero else { return }
        intervalWarningGiven = true
        let rate = Double(pendingWalBytes) / elapsed.seconds
        let message = "[persistence] checkpoint_interval_secs = \(Int(policy.interval.seconds)) cannot hold: the WAL grows by "
            + "\(Int(rate / 1024)) KB/s here and reaches max_wal_size_mb = \(policy.maxWalBytes / 1_048_576) in "
            + String(format: "%.1f s; checkpoints follow the size limit instead", Double(policy.maxWalBytes) / rate)
        logger.warning("\(message)")
    }

    /// Runs one checkpoint with `sqlite3_wal_checkpoint_v2`
    /// (<https://sqlite.org/c3ref/wal_checkpoint_v2.html>) and records it.
    @discardableResult
    func checkpoint(_ mode: CheckpointPolicy.Mode) -> Bool {
        let started = clock.now()
        var log: Int32 = 0
        var copied: Int32 = 0
        var code: Int32 = SQLITE_OK
        do {
            try store.withConnection { db in
                let sqliteMode: Int32 = switch mode {
                case .passive: SQLITE_CHECKPOINT_PASSIVE
                case .restart: SQLITE_CHECKPOINT_RESTART
                case .truncate: SQLITE_CHECKPOINT_TRUNCATE
                }
                code = sqlite3_wal_checkpoint_v2(db.sqliteConnection, nil, sqliteMode, &log, &copied)
            }
        } catch {
            code = (error as? DatabaseError)?.extendedResultCode.rawValue ?? SQLITE_ERROR
        }
        if code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB {
            reportIfCorrupt(StoreError(.corrupt, sqliteCode: code, message: "\(mode.rawValue) checkpoint: \(String(cString: sqlite3_errstr(code)))",
                                       path: store.location.path))
        }
        let complete = code == SQLITE_OK && copied >= log
        lastCheckpoint = clock.now()
        if complete {
            incompleteStreak = 0
            // The next commit restarts the WAL from its first frame.
            walFrames.frames = 0
        } else {
            incompleteStreak += 1
            if log > 0 { walFrames.frames = max(0, log - copied) }
            logger.notice("writer: \(mode.rawValue) checkpoint incomplete (code \(code), \(copied)/\(log) frames); streak \(incompleteStreak)")
        }
        let elapsed = lastCheckpoint.duration(since: started)
        metrics.timers.checkpoint(mode.rawValue, took: elapsed)
        observer?.didCheckpoint(CheckpointRecord(at: lastCheckpoint, mode: mode.rawValue, complete: complete))
        let walBytes = store.location.walBytes
        metrics.update {
            $0.checkpointCount += 1
            $0.checkpointsByMode[mode.rawValue, default: 0] += 1
            if !complete { $0.incompleteCheckpoints += 1 }
            $0.totalCheckpointDuration += elapsed
            $0.walSizeBytes = walBytes
        }
        return complete
    }
}

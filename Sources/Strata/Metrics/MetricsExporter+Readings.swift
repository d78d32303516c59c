/// Every figure the exporter reports, by its swift-metrics label. Counters end in
/// `_total` (they only grow within a session), durations are in seconds, sizes in bytes.
/// `docs/metrics.md` lists them with their meaning.
extension MetricsExporter {
    static func readings(_ m: PersistenceMetrics) -> [Reading] {
        var r: [Reading] = [
            // Write volume
            .counter("strata_component_rows_written_total", m.componentRowsWritten),
            .counter("strata_component_rows_deleted_total", m.componentRowsDeleted),
            .counter("strata_entity_rows_inserted_total", m.entityRowsInserted),
            .counter("strata_entity_rows_deleted_total", m.entityRowsDeleted),
            .counter("strata_setting_rows_written_total", m.settingRowsWritten),
            .counter("strata_operations_logged_total", m.operationsLogged),
            .counter("strata_vector_clock_rows_written_total", m.vectorClockRowsWritten),
            .counter("strata_operations_dropped_total", m.operationsDropped),
            .counter("strata_payload_bytes_written_total", m.payloadBytesWritten),
            .counter("strata_operation_payload_bytes_total", m.operationPayloadBytes),
            .counter("strata_segments_written_total", m.segmentsWritten),
            .counter("strata_segment_bytes_written_total", m.segmentBytesWritten),
            // The segment log now
            .gauge("strata_segment_backlog_rows", Double(m.segmentBacklogRows)),
            .gauge("strata_segment_backlog_bytes", Double(m.segmentBacklogBytes)),
            .gauge("strata_segment_backlog_records", Double(m.segmentBacklogRecords)),
            .gauge("strata_segment_live_bytes", Double(m.segmentLiveBytes)),
            .gauge("strata_unreadable_segments", Double(m.unreadableSegments)),
            // Compaction
            .counter("strata_compaction_steps_total", m.compactionSteps),
            .counter("strata_compaction_failed_steps_total", m.failedCompactionSteps),
            .counter("strata_compaction_bytes_read_total", m.compactionBytesRead),
            .counter("strata_compaction_bytes_written_total", m.compactionBytesWritten),
            .counter("strata_compaction_keys_folded_total", m.compactionKeysFolded),
            .gauge("strata_compaction_step_max_seconds", m.maxCompactionStepDuration.seconds),
            // Maintenance
            .counter("strata_maintenance_rounds_total", m.maintenanceRounds),
            .counter("strata_maintenance_steps_total", m.maintenanceSteps),
            .counter("strata_maintenance_failed_steps_total", m.failedMaintenanceSteps),
            .counter("strata_retention_rows_deleted_total", m.retentionRowsDeleted),
            .counter("strata_pages_vacuumed_total", m.pagesVacuumed),
            .counter("strata_optimize_runs_total", m.optimizeRuns),
            .gauge("strata_file_bytes", Double(m.fileBytes)),
            .gauge("strata_free_bytes", Double(m.freeBytes)),
            .gauge("strata_alert", m.fileSizeWarning ? 1 : 0, ("alert", "file_size")),
            // Backups
            .counter("strata_backups_total", m.backupsCompleted, ("outcome", "verified")),
            .counter("strata_backups_total", m.backupsFailed, ("outcome", "failed")),
            .gauge("strata_backup_step_max_seconds", m.maxBackupStepDuration.seconds),
            // Flushes and commits
            .counter("strata_commits_total", m.fullCommitCount, ("durability", "full")),
            .counter("strata_commits_total", m.commitCount - m.fullCommitCount, ("durability", "normal")),
            .gauge("strata_commit_max_seconds", m.maxCommitDuration.seconds),
            .counter("strata_merged_batches_total", m.mergedBatches),
            .counter("strata_writer_wakes_total", m.writerWakes),
            .seconds("strata_writer_cpu_seconds_total", m.writerCPUTime),
            // Failures
            .counter("strata_failed_commits_total", m.failedCommits),
            .counter("strata_writer_requests_total", m.writerRequests),
            .counter("strata_rejected_rows_total", m.rejectedRows - m.rejectedRowsInSideFile, ("parked_in", "database")),
            .counter("strata_rejected_rows_total", m.rejectedRowsInSideFile, ("parked_in", "side_file")),
            .counter("strata_lost_rows_total", m.lostRows),
            .counter("strata_jobs_not_queued_total", m.jobsNotQueued),
            .counter("strata_jobs_lost_total", m.jobsLost),
            .counter("strata_rows_committed_late_total", m.rowsCommittedLate),
            .gauge("strata_rows_held", Double(m.rowsHeld)),
            .counter("strata_batches_held_for_disk_space_total", m.batchesHeldForDiskSpace),
            .gauge("strata_low_disk_space", m.lowDiskSpace ? 1 : 0),
            // Checkpoints and the WAL
            .counter("strata_incomplete_checkpoints_total", m.incompleteCheckpoints),
            .gauge("strata_wal_size_bytes", Double(m.walSizeBytes)),
            .gauge("strata_wal_max_size_bytes", Double(m.maxWalSizeBytes)),
            // Recovery
            .counter("strata_store_replacements_total", m.storeReplacements),
            .gauge("strata_sessions", Double(m.crashRecoveryCount), ("ended", "crash")),
            .gauge("strata_sessions", Double(m.cleanShutdownCount), ("ended", "clean")),
            // the specification's alerts, 1 while raised
            .gauge("strata_alert", m.maxRoutineCommitDuration > .milliseconds(50) ? 1 : 0, ("alert", "slow_flush")),
            .gauge("strata_alert", m.walPastLimitBytes > 0 ? 1 : 0, ("alert", "large_wal")),
            .gauge("strata_alert", crashRateAlert(m) ? 1 : 0, ("alert", "crash_rate")),
        ]
        if let free = m.freeDiskBytes { r.append(.gauge("strata_free_disk_bytes", Double(free))) }
        if let check = m.integrityCheck { r.append(.gauge("strata_integrity_ok", check == "ok" ? 1 : 0)) }
        for reason in FlushReason.allCases {
            r.append(.counter("strata_flushes_total", m.flushesByReason[reason] ?? 0, ("reason", reason.rawValue)))
        }
        for method in ["merge", "fold"] {
            r.append(.counter("strata_compaction_rounds_total", m.compactionsByMethod[method] ?? 0, ("method", method)))
        }
        for kind in Set(BatchSection.allCases.map(\.kind.rawValue)).sorted() {
            r.append(.counter("strata_rows_committed_total", m.rowsCommittedByKind[kind] ?? 0, ("kind", kind)))
        }
        for (mode, count) in m.checkpointsByMode {
            r.append(.counter("strata_checkpoints_total", count, ("mode", mode.lowercased())))
        }
        if let vfs = m.vfs {
            for (file, counts) in [("main", vfs.mainDatabase), ("wal", vfs.wal), ("journal", vfs.journal), ("other", vfs.other)] {
                r.append(.counter("strata_vfs_syncs_total", counts.syncs, ("file", file)))
                r.append(.counter("strata_vfs_writes_total", counts.writes, ("file", file)))
                r.append(.counter("strata_vfs_write_bytes_total", counts.writeBytes, ("file", file)))
            }
        }
        return r
    }

    /// More than 10 % of the sessions crashed (the specification's alert; as ``PersistenceMetrics/alerts``).
    static func crashRateAlert(_ m: PersistenceMetrics) -> Bool {
        let sessions = m.crashRecoveryCount + m.cleanShutdownCount
        return sessions > 0 && Double(m.crashRecoveryCount) / Double(sessions) > 0.1
    }

    /// Replicated components (``ReplicationStatus``): outcomes, overwrites between devices
    /// by the gap between them, values held back by reason (since the open, and now).
    static func readings(replication status: ReplicationStatus) -> [Reading] {
        let overwrites = status.overwrites
        var r: [Reading] = [
            .counter("strata_replicated_applied_total", status.applied),
            .counter("strata_replicated_superseded_total", status.superseded),
            .counter("strata_replicated_after_despawn_total", status.afterDespawn),
            .counter("strata_replicated_malformed_total", status.malformed),
            .counter("strata_replicated_logged_total", status.logged),
            .counter("strata_replicated_overwrites_total", overwrites.under250ms, ("gap", "under_250ms")),
            .counter("strata_replicated_overwrites_total", overwrites.under1s, ("gap", "under_1s")),
            .counter("strata_replicated_overwrites_total", overwrites.under10s, ("gap", "under_10s")),
            .counter("strata_replicated_overwrites_total", overwrites.longer, ("gap", "10s_or_more")),
        ]
        for reason in HeldValue.Reason.allCases {
            let name = reason.metricLabel
            r.append(.counter("strata_replicated_held_total", status.heldByReason[reason.description] ?? 0, ("reason", name)))
            r.append(.gauge("strata_replicated_held", Double(status.heldNow[reason.description] ?? 0), ("reason", name)))
        }
        return r
    }

    static func readings(jobs: [Job.Status: Int]) -> [Reading] {
        Job.Status.allCases.map { .gauge("strata_jobs", Double(jobs[$0] ?? 0), ("status", $0.rawValue)) }
    }

    static func readings(sync state: SyncState, outbox: Int) -> [Reading] {
        [
            .gauge("strata_sync_online", state.online ? 1 : 0),
            .gauge("strata_sync_outbox_operations", Double(outbox)),
            .counter("strata_sync_pushes_total", state.pushes),
            .counter("strata_sync_pushed_operations_total", state.pushedOperations),
            .counter("strata_sync_duplicates_ignored_total", state.duplicatesIgnored),
            .counter("strata_sync_pulled_operations_total", state.pulledOperations),
            .counter("strata_sync_refusals_total", state.refusals),
            .gauge("strata_sync_dead_letters", Double(state.deadLetters)),
            .gauge("strata_sync_listening", state.listening ? 1 : 0),
            .counter("strata_sync_notifications_total", state.notifications),
            .counter("strata_sync_requests_total", state.requests),
            .counter("strata_sync_pulls_total", state.pulls),
            .gauge("strata_sync_catching_up", state.catchingUp ? 1 : 0),
            .gauge("strata_sync_catch_up_pulled_operations", Double(state.catchUpPulled)),
        ]
    }
}

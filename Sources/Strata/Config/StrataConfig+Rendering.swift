extension StrataConfig {
    /// The effective configuration as TOML, every key present (what `strata check-config` prints).
    public func renderTOML() -> String {
        func secs(_ d: Duration) -> String {
            let s = d.seconds
            return s == s.rounded() ? String(Int(s)) : String(s)
        }
        func ms(_ d: Duration) -> String { String(Int(d.milliseconds.rounded())) }
        func num(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
        func mb(_ bytes: Int) -> String {
            let v = Double(bytes) / 1_048_576
            return v == v.rounded() ? String(Int(v)) : String(v)
        }
        let p = persistence
        return """
            [database]
            path = "\(database.path)"
            page_size = \(database.pageSize)
            auto_vacuum = "\(database.autoVacuum.rawValue)"

            [simulation]
            tick_hz = \(simulation.tickHz)
            max_catch_up_ticks = \(simulation.maxCatchUpTicks)

            [persistence]
            flush_interval_secs = \(secs(p.flushInterval))
            critical_flush_delay_ms = \(ms(p.criticalFlushDelay))
            checkpoint_interval_secs = \(secs(p.checkpointInterval))
            max_wal_size_mb = \(mb(p.maxWalSizeBytes))
            battery_adaptive = \(p.batteryAdaptive)
            critical_durability = "\(p.criticalDurability.rawValue)"
            idle_after_secs = \(secs(p.idleAfter))
            idle_flush_interval_secs = \(secs(p.idleFlushInterval))
            vector_clock_every_operations = \(p.vectorClockEveryOperations)
            vector_clock_every_secs = \(secs(p.vectorClockInterval))

            [persistence.battery_tiers]
            charging = \(secs(p.batteryTiers.charging))
            high = \(secs(p.batteryTiers.high))
            medium = \(secs(p.batteryTiers.medium))
            low = \(secs(p.batteryTiers.low))
            high_above_percent = \(num(p.batteryTiers.highAbovePercent))
            low_below_percent = \(num(p.batteryTiers.lowBelowPercent))

            [persistence.linux]
            low_power_mode_interval_secs = \(secs(p.lowPowerModeInterval))
            background_flush_timeout_secs = \(secs(p.backgroundFlushTimeout))
            power_source = "\(p.power.source.rawValue)"
            power_fallback = "\(p.power.fallback.rawValue)"
            power_poll_interval_secs = \(secs(p.power.pollInterval))
            dbus_timeout_ms = \(ms(p.power.dbusTimeout))
            memory_pressure_percent = \(num(p.memoryPressurePercent))
            memory_poll_interval_secs = \(secs(p.memoryPollInterval))

            [persistence.desktop]
            flush_interval_secs = \(secs(p.desktop.flushInterval))
            max_wal_size_mb = \(mb(p.desktop.maxWalSizeBytes))

            [writer]
            busy_timeout_ms = \(ms(writer.busyTimeout))
            retry_initial_backoff_ms = \(ms(writer.retryInitialBackoff))
            retry_max_backoff_ms = \(ms(writer.retryMaxBackoff))
            min_free_disk_mb = \(mb(writer.minFreeDiskBytes))
            disk_reserve_kb = \(writer.diskReserveBytes / 1024)

            [compaction]
            idle_backlog_mb = \(mb(compaction.idleBacklogBytes))
            backlog_mb = \(mb(compaction.backlogBytes))
            max_backlog_mb = \(mb(compaction.maxBacklogBytes))
            step_budget_ms = \(ms(compaction.stepBudget))

            [operation_log]
            retention = "\(operationLog.retention.rawValue)"
            retention_min_age_secs = \(secs(operationLog.retentionMinAge))

            [maintenance]
            interval_secs = \(secs(maintenance.interval))
            size_warning_mb = \(mb(maintenance.sizeWarningBytes))
            vacuum_min_free_mb = \(mb(maintenance.vacuumMinFreeBytes))
            vacuum_max_free_mb = \(mb(maintenance.vacuumMaxFreeBytes))
            vacuum_step_pages = \(maintenance.vacuumStepPages)
            retention_step_rows = \(maintenance.retentionStepRows)
            analysis_limit = \(maintenance.analysisLimit)
            rewrite_old_payloads = \(maintenance.rewriteOldPayloads)
            rewrite_step_rows = \(maintenance.rewriteStepRows)
            keep_dead_jobs_secs = \(secs(maintenance.keepDeadJobs))
            keep_rejected_writes_secs = \(secs(maintenance.keepRejectedWrites))
            start_check_secs = \(secs(maintenance.startCheckAge))

            \(renderedBackup)\(renderedHistory)[jobs]
            workers = \(jobs.workers)
            max_attempts = \(jobs.maxAttempts)
            retry_initial_backoff_ms = \(ms(jobs.retryInitialBackoff))
            retry_max_backoff_secs = \(secs(jobs.retryMaxBackoff))
            keep_finished_secs = \(secs(jobs.keepFinished))
            shutdown_timeout_secs = \(secs(jobs.shutdownTimeout))

            [sync]
            server = "\(sync.server)"
            token_file = "\(sync.tokenFile)"
            document = "\(sync.document)"
            batch_size = \(sync.batchSize)
            pull_batch_size = \(sync.pullBatchSize)
            join_batch_size = \(sync.joinBatchSize)
            max_attempts = \(sync.maxAttempts)
            retry_initial_backoff_ms = \(ms(sync.retryInitialBackoff))
            retry_max_backoff_secs = \(secs(sync.retryMaxBackoff))
            pull_interval_ms = \(ms(sync.pullInterval))
            listen = \(sync.listen)
            safety_pull_secs = \(secs(sync.safetyPull))
            push_interval_ms = \(ms(sync.pushInterval))
            network_source = "\(sync.networkSource.rawValue)"
            request_timeout_ms = \(ms(sync.requestTimeout))
            \(sync.replicateInterval.map { "replicate_interval_ms = \(ms($0))" } ?? "# replicate_interval_ms: the critical flush delay")
            max_clock_ahead_secs = \(secs(sync.maxClockAhead))

            [assets]
            unknown_files = "\(assets.unknownFiles.rawValue)"
            min_file_bytes = \(assets.minFileBytes)

            [metrics]
            count_fsyncs = \(metrics.countFsyncs)
            export_interval_ms = \(ms(metrics.exportInterval))

            """
    }
}

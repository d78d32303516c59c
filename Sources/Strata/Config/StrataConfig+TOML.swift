import Foundation
import TOMLKit

extension StrataConfig {
    /// Loads and validates a TOML file.
    ///
    /// - Throws: ``ConfigError`` naming the file, line and key path.
    public static func load(path: String) throws -> StrataConfig {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(.unreadable, message: "cannot read the file: \(error.localizedDescription)", source: path)
        }
        return try parse(try text(of: data, source: path), source: path)
    }

    /// The file's bytes as UTF-8 text, or an error naming the line of the first byte that
    /// is not (``parse(_:source:)`` then refuses control characters: a NUL would end the
    /// parse early and leave the rest of the file unread).
    static func text(of data: Data, source: String) throws -> String {
        let bytes = [UInt8](data)
        func line(at offset: Int) -> Int { bytes[..<offset].reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) } }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            // Where the byte structure first breaks (a lead byte and its continuations).
            var end = 0
            while end < bytes.count {
                let lead = bytes[end]
                let length = lead < 0x80 ? 1 : lead >> 5 == 0b110 ? 2 : lead >> 4 == 0b1110 ? 3 : lead >> 3 == 0b11110 ? 4 : 0
                guard length > 0, end + length <= bytes.count,
                      bytes[end + 1 ..< end + length].allSatisfy({ $0 >> 6 == 0b10 }) else { break }
                end += length
            }
            throw ConfigError(.syntax, message: "the file is not UTF-8 text (invalid byte at \(end))", source: source, line: line(at: end))
        }
        return text
    }

    /// Parses and validates TOML text. Absent keys keep their defaults.
    /// An escaped NUL in a string (`\u0000`, `\U00000000`): the parser hands strings on as C
    /// strings, which end there, so `"a\u0000b"` would silently read as `"a"`. Refused with
    /// the key and the line.
    static func rejectEscapedNul(_ text: String, source: String?) throws {
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var backslashes = 0
            var index = line.startIndex
            while index < line.endIndex {
                let character = line[index]
                if character == "\\" {
                    backslashes += 1
                } else {
                    if backslashes % 2 == 1, character == "u" || character == "U" {
                        let digits = line[line.index(after: index)...].prefix(character == "u" ? 4 : 8)
                        if digits.count == (character == "u" ? 4 : 8), digits.allSatisfy({ $0 == "0" }) {
                            let key = line.split(separator: "=", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?"
                            throw ConfigError(.invalidValue, keyPath: key, message: "a NUL character (\\u0000) is not allowed in a string: a path or an address would end there",
                                              source: source, line: number + 1)
                        }
                    }
                    backslashes = 0
                }
                index = line.index(after: index)
            }
        }
    }

    public static func parse(_ text: String, source: String? = nil) throws -> StrataConfig {
        // TOML allows no raw control character but tab and line ends (escape them in
        // strings), and the parser stops the process on some (an assertion in toml++).
        if let bad = text.utf8.firstIndex(where: { ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D) || $0 == 0x7F }) {
            let line = text.utf8[..<bad].reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            let what = text.utf8[bad] == 0 ? "a NUL byte" : String(format: "a control character (U+%04X)", Int(text.utf8[bad]))
            throw ConfigError(.syntax, message: "\(what) is not allowed in TOML (escape it inside a string)", source: source, line: line)
        }
        try rejectEscapedNul(text, source: source)
        let root: TOMLTable
        do {
            root = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigError(.syntax, message: error.description, source: source,
                              line: error.source.begin.line, column: error.source.begin.column)
        }
        let map = ConfigSourceMap(text: text, source: source)
        var reader = ConfigReader(table: root, path: "", map: map)
        var config = StrataConfig()
        if var db = try reader.table("database") {
            config.database = try readDatabase(&db)
        }
        if var sim = try reader.table("simulation") {
            config.simulation = try readSimulation(&sim)
        }
        if var persistence = try reader.table("persistence") {
            config.persistence = try readPersistence(&persistence)
        }
        if var writer = try reader.table("writer") {
            config.writer = try readWriter(&writer)
        }
        if var compaction = try reader.table("compaction") {
            config.compaction = try readCompaction(&compaction)
        }
        if var log = try reader.table("operation_log") {
            config.operationLog.retention = try log.choice("retention", default: config.operationLog.retention)
            config.operationLog.retentionMinAge = try log.duration("retention_min_age_secs", default: config.operationLog.retentionMinAge,
                                                                  unit: .seconds, allowZero: true, max: .seconds(100 * 365 * 86_400))
            try log.rejectUnknownKeys(known: ["retention", "retention_min_age_secs"])
        }
        if var maintenance = try reader.table("maintenance") {
            config.maintenance = try readMaintenance(&maintenance)
        }
        if var backup = try reader.table("backup") {
            config.backup = try readBackup(&backup)
        }
        if var history = try reader.table("history") {
            config.history = try readHistory(&history)
        }
        if var jobs = try reader.table("jobs") {
            config.jobs = try readJobs(&jobs)
        }
        if var sync = try reader.table("sync") {
            config.sync = try readSync(&sync)
        }
        if var assets = try reader.table("assets") {
            config.assets.unknownFiles = try assets.choice("unknown_files", default: config.assets.unknownFiles)
            config.assets.minFileBytes = try assets.int("min_file_bytes", default: config.assets.minFileBytes, range: 0 ... Int(Int32.max))
            try assets.rejectUnknownKeys(known: ["unknown_files", "min_file_bytes"])
        }
        if var metrics = try reader.table("metrics") {
            config.metrics.countFsyncs = try metrics.bool("count_fsyncs", default: config.metrics.countFsyncs)
            config.metrics.exportInterval = try metrics.duration("export_interval_ms", default: config.metrics.exportInterval,
                                                                 unit: .milliseconds, allowZero: true, max: .seconds(3600))
            try metrics.rejectUnknownKeys(known: ["count_fsyncs", "export_interval_ms"])
        }
        try reader.rejectUnknownKeys(known: ["database", "simulation", "persistence", "writer", "compaction", "operation_log", "maintenance", "backup", "history", "jobs", "sync", "assets", "metrics"])
        return config
    }

    static func readDatabase(_ r: inout ConfigReader) throws -> DatabaseConfig {
        var c = DatabaseConfig()
        c.path = try r.string("path", default: c.path)
        if c.path.isEmpty { throw r.error(.invalidValue, "path", "must not be empty") }
        c.pageSize = try r.int("page_size", default: c.pageSize, range: 512 ... 65536, unit: " bytes")
        if c.pageSize & (c.pageSize - 1) != 0 {
            throw r.error(.invalidValue, "page_size", "must be a power of two between 512 and 65536, got \(c.pageSize)")
        }
        c.autoVacuum = try r.choice("auto_vacuum", default: c.autoVacuum)
        try r.rejectUnknownKeys(known: ["path", "page_size", "auto_vacuum"])
        return c
    }

    static func readSimulation(_ r: inout ConfigReader) throws -> SimulationConfig {
        var c = SimulationConfig()
        c.tickHz = try r.int("tick_hz", default: c.tickHz, range: 1 ... 1000, unit: " ticks per second")
        c.maxCatchUpTicks = try r.int("max_catch_up_ticks", default: c.maxCatchUpTicks, range: 1 ... 1000)
        try r.rejectUnknownKeys(known: ["tick_hz", "max_catch_up_ticks"])
        return c
    }

    static func readCompaction(_ r: inout ConfigReader) throws -> CompactionConfig {
        var c = CompactionConfig()
        c.idleBacklogBytes = try r.megabytes("idle_backlog_mb", default: c.idleBacklogBytes)
        c.backlogBytes = try r.megabytes("backlog_mb", default: c.backlogBytes)
        c.maxBacklogBytes = try r.megabytes("max_backlog_mb", default: c.maxBacklogBytes)
        c.stepBudget = try r.duration("step_budget_ms", default: c.stepBudget, unit: .milliseconds)
        if c.idleBacklogBytes > c.backlogBytes {
            throw r.error(.invalidValue, "idle_backlog_mb",
                          "must not be above backlog_mb (\(Double(c.backlogBytes) / 1_048_576)), got \(Double(c.idleBacklogBytes) / 1_048_576)")
        }
        if c.backlogBytes > c.maxBacklogBytes {
            throw r.error(.invalidValue, "backlog_mb",
                          "must not be above max_backlog_mb (\(Double(c.maxBacklogBytes) / 1_048_576)), got \(Double(c.backlogBytes) / 1_048_576)")
        }
        if c.stepBudget > .seconds(1) {
            throw r.error(.invalidValue, "step_budget_ms", "must be at most 1000 (a step holds up every write behind it), got \(Int(c.stepBudget.milliseconds))")
        }
        try r.rejectUnknownKeys(known: ["idle_backlog_mb", "backlog_mb", "max_backlog_mb", "step_budget_ms"])
        return c
    }

    static func readMaintenance(_ r: inout ConfigReader) throws -> MaintenanceConfig {
        var c = MaintenanceConfig()
        c.interval = try r.duration("interval_secs", default: c.interval, unit: .seconds, max: .seconds(30 * 86_400))
        c.sizeWarningBytes = try r.megabytes("size_warning_mb", default: c.sizeWarningBytes)
        c.vacuumMinFreeBytes = try r.megabytes("vacuum_min_free_mb", default: c.vacuumMinFreeBytes)
        c.vacuumMaxFreeBytes = try r.megabytes("vacuum_max_free_mb", default: c.vacuumMaxFreeBytes)
        if c.vacuumMaxFreeBytes < c.vacuumMinFreeBytes {
            throw r.error(.invalidValue, "vacuum_max_free_mb", "must be at least vacuum_min_free_mb")
        }
        c.vacuumStepPages = try r.int("vacuum_step_pages", default: c.vacuumStepPages, range: 1 ... 1_000_000, unit: " pages")
        c.retentionStepRows = try r.int("retention_step_rows", default: c.retentionStepRows, range: 1 ... 1_000_000, unit: " rows")
        c.analysisLimit = try r.int("analysis_limit", default: c.analysisLimit, range: 0 ... 1_000_000, unit: " rows")
        c.rewriteOldPayloads = try r.bool("rewrite_old_payloads", default: c.rewriteOldPayloads)
        c.rewriteStepRows = try r.int("rewrite_step_rows", default: c.rewriteStepRows, range: 1 ... 1_000_000, unit: " rows")
        c.keepDeadJobs = try r.duration("keep_dead_jobs_secs", default: c.keepDeadJobs, unit: .seconds, allowZero: true,
                                        max: .seconds(100 * 365 * 86_400))
        c.keepRejectedWrites = try r.duration("keep_rejected_writes_secs", default: c.keepRejectedWrites, unit: .seconds,
                                              allowZero: true, max: .seconds(100 * 365 * 86_400))
        c.startCheckAge = try r.duration("start_check_secs", default: c.startCheckAge, unit: .seconds, allowZero: true,
                                         max: .seconds(100 * 365 * 86_400))
        try r.rejectUnknownKeys(known: ["interval_secs", "size_warning_mb", "vacuum_min_free_mb", "vacuum_max_free_mb",
                                        "vacuum_step_pages", "retention_step_rows", "analysis_limit", "rewrite_old_payloads",
                                        "rewrite_step_rows", "keep_dead_jobs_secs",
                                        "keep_rejected_writes_secs", "start_check_secs"])
        return c
    }

    static func readJobs(_ r: inout ConfigReader) throws -> JobsConfig {
        var c = JobsConfig()
        c.workers = try r.int("workers", default: c.workers, range: 0 ... 256)
        c.maxAttempts = try r.int("max_attempts", default: c.maxAttempts, range: 1 ... 1_000_000)
        c.retryInitialBackoff = try r.duration("retry_initial_backoff_ms", default: c.retryInitialBackoff, unit: .milliseconds)
        c.retryMaxBackoff = try r.duration("retry_max_backoff_secs", default: c.retryMaxBackoff, unit: .seconds)
        c.keepFinished = try r.duration("keep_finished_secs", default: c.keepFinished, unit: .seconds, allowZero: true,
                                        max: .seconds(100 * 365 * 86_400))
        c.shutdownTimeout = try r.duration("shutdown_timeout_secs", default: c.shutdownTimeout, unit: .seconds, allowZero: true,
                                           max: .seconds(3600))
        if c.retryMaxBackoff < c.retryInitialBackoff {
            throw r.error(.invalidValue, "retry_max_backoff_secs", "must be at least retry_initial_backoff_ms")
        }
        try r.rejectUnknownKeys(known: ["workers", "max_attempts", "retry_initial_backoff_ms", "retry_max_backoff_secs",
                                        "keep_finished_secs", "shutdown_timeout_secs"])
        return c
    }

    static func readSync(_ r: inout ConfigReader) throws -> SyncConfig {
        var c = SyncConfig()
        c.server = try r.string("server", default: c.server)
        if !c.server.isEmpty && !["postgresql://", "postgres://", "http://", "https://"].contains(where: c.server.hasPrefix) {
            throw r.error(.invalidValue, "server", "must be an https:// (or loopback http://) sync service, a postgresql:// URL or empty, got \"\(c.server)\"")
        }
        c.tokenFile = try r.string("token_file", default: c.tokenFile)
        c.document = try r.string("document", default: c.document)
        if c.document.isEmpty { throw r.error(.invalidValue, "document", "must not be empty") }
        c.batchSize = try r.int("batch_size", default: c.batchSize, range: 1 ... 10_000)
        c.pullBatchSize = try r.int("pull_batch_size", default: c.pullBatchSize, range: 1 ... 100_000)
        c.maxAttempts = try r.int("max_attempts", default: c.maxAttempts, range: 1 ... 1_000_000)
        c.retryInitialBackoff = try r.duration("retry_initial_backoff_ms", default: c.retryInitialBackoff, unit: .milliseconds)
        c.retryMaxBackoff = try r.duration("retry_max_backoff_secs", default: c.retryMaxBackoff, unit: .seconds, max: .seconds(86_400))
        if c.retryMaxBackoff < c.retryInitialBackoff {
            throw r.error(.invalidValue, "retry_max_backoff_secs", "must be at least retry_initial_backoff_ms")
        }
        c.joinBatchSize = try r.int("join_batch_size", default: c.joinBatchSize, range: 1 ... 100_000)
        if c.joinBatchSize < c.pullBatchSize {
            throw r.error(.invalidValue, "join_batch_size", "must be at least pull_batch_size (\(c.pullBatchSize))")
        }
        c.pullInterval = try r.duration("pull_interval_ms", default: c.pullInterval, unit: .milliseconds, max: .seconds(86_400))
        c.listen = try r.bool("listen", default: c.listen)
        c.safetyPull = try r.duration("safety_pull_secs", default: c.safetyPull, unit: .seconds, max: .seconds(86_400))
        c.pushInterval = try r.duration("push_interval_ms", default: c.pushInterval, unit: .milliseconds, max: .seconds(3600))
        c.networkSource = try r.choice("network_source", default: c.networkSource)
        c.requestTimeout = try r.duration("request_timeout_ms", default: c.requestTimeout, unit: .milliseconds, max: .seconds(600))
        if r.has("replicate_interval_ms") {
            c.replicateInterval = try r.duration("replicate_interval_ms", default: .seconds(1), unit: .milliseconds, max: .seconds(3600))
        }
        // `max_clock_skew_secs`: its name before, still read.
        if r.has("max_clock_ahead_secs") && r.has("max_clock_skew_secs") {
            throw ConfigError(.invalidValue, keyPath: "sync.max_clock_skew_secs",
                              message: "is the former name of sync.max_clock_ahead_secs: give one of them")
        }
        let aheadKey = r.has("max_clock_skew_secs") ? "max_clock_skew_secs" : "max_clock_ahead_secs"
        c.maxClockAhead = try r.duration(aheadKey, default: c.maxClockAhead, unit: .seconds, max: .seconds(86_400 * 365))
        try r.rejectUnknownKeys(known: ["server", "token_file", "document", "batch_size", "pull_batch_size", "max_attempts", "retry_initial_backoff_ms",
                                        "retry_max_backoff_secs", "pull_interval_ms", "push_interval_ms", "network_source",
                                        "request_timeout_ms", "join_batch_size", "listen", "safety_pull_secs",
                                        "replicate_interval_ms", "max_clock_ahead_secs", "max_clock_skew_secs"])
        return c
    }

    static func readWriter(_ r: inout ConfigReader) throws -> WriterConfig {
        var c = WriterConfig()
        c.busyTimeout = try r.duration("busy_timeout_ms", default: c.busyTimeout, unit: .milliseconds, allowZero: true,
                                       max: .seconds(600))   // SQLite takes it as an Int32 of ms
        c.retryInitialBackoff = try r.duration("retry_initial_backoff_ms", default: c.retryInitialBackoff, unit: .milliseconds)
        c.retryMaxBackoff = try r.duration("retry_max_backoff_ms", default: c.retryMaxBackoff, unit: .milliseconds)
        if c.retryMaxBackoff < c.retryInitialBackoff {
            throw r.error(.invalidValue, "retry_max_backoff_ms",
                          "must be at least retry_initial_backoff_ms (\(Int(c.retryInitialBackoff.milliseconds))), got \(Int(c.retryMaxBackoff.milliseconds))")
        }
        let minFree = try r.number("min_free_disk_mb", default: Double(c.minFreeDiskBytes) / 1_048_576, range: 0 ... 1_048_576, unit: " MB")
        c.minFreeDiskBytes = Int(minFree * 1_048_576)
        let reserve = try r.number("disk_reserve_kb", default: Double(c.diskReserveBytes / 1024), range: 0 ... 1_048_576, unit: " KB")
        c.diskReserveBytes = Int(reserve) * 1024
        try r.rejectUnknownKeys(known: ["busy_timeout_ms", "retry_initial_backoff_ms", "retry_max_backoff_ms", "min_free_disk_mb",
                                        "disk_reserve_kb"])
        return c
    }
}

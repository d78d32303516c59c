import Foundation
import Testing
@testable import Strata

@Suite struct ConfigTests {
    func error(_ toml: String) -> ConfigError? {
        do {
            _ = try StrataConfig.parse(toml, source: "test.toml")
            return nil
        } catch let error as ConfigError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func anEmptyFileIsTheDefaults() throws {
        #expect(try StrataConfig.parse("") == StrataConfig())
    }

    @Test func theShippedConfigIsValidAndDocumentsTheDefaults() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var shipped = try StrataConfig.load(path: root.appendingPathComponent("config.toml").path)
        #expect(shipped.database.path == "strata-data/canvas.db")
        shipped.database.path = StrataConfig().database.path
        #expect(shipped == StrataConfig())
    }

    @Test func theShippedConfigHasEveryKey() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try String(contentsOf: root.appendingPathComponent("config.toml"), encoding: .utf8)
        func keys(_ toml: String) -> Set<String> {
            var table = "", result = Set<String>()
            for raw in toml.split(separator: "\n") {
                let line = raw.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("[") { table = String(line.dropFirst().dropLast()) }
                else if !line.hasPrefix("#"), let eq = line.firstIndex(of: "=") {
                    result.insert(table + "." + line[..<eq].trimmingCharacters(in: .whitespaces))
                }
            }
            return result
        }
        #expect(keys(StrataConfig().renderTOML()) == keys(shipped))
    }

    /// A NUL in a string would end a path (or a server's address) at the C call: refused by key.
    @Test func aNulInAStringIsRefusedByKey() throws {
        for (table, key) in [("database", "path"), ("backup", "folder"), ("sync", "server"), ("sync", "document")] {
            #expect(throws: ConfigError.self) { try StrataConfig.parse("[\(table)]\n\(key) = \"a\\u0000b\"") }
            do {
                _ = try StrataConfig.parse("[\(table)]\n\(key) = \"a\\u0000b\"")
            } catch {
                #expect("\(error)".contains(key) && "\(error)".contains("NUL") && "\(error)".contains(":2"), "\(error)")
            }
        }
        var config = StrataConfig()
        config.database.path = TestDirectory().url.path + "/a\0b.db"
        #expect(throws: StoreError.self) { try Engine.open(config: config, logger: quietLogger) }
    }

    @Test func renderedConfigParsesBackToItself() throws {
        var config = StrataConfig()
        config.persistence.flushInterval = .milliseconds(2500)
        config.persistence.batteryTiers.low = .seconds(90)
        config.persistence.criticalDurability = .crash
        config.database.pageSize = 16384
        config.database.autoVacuum = .none
        config.persistence.power.fallback = .batteryMedium
        config.persistence.power.dbusTimeout = .milliseconds(250)
        config.persistence.batteryTiers.highAbovePercent = 60.5
        config.persistence.memoryPressurePercent = 25
        #expect(try StrataConfig.parse(config.renderTOML()) == config)
    }

    @Test func valuesAreRead() throws {
        let config = try StrataConfig.parse("""
            [persistence]
            flush_interval_secs = 2.5
            critical_flush_delay_ms = 250
            max_wal_size_mb = 1
            [persistence.battery_tiers]
            low = 120
            [simulation]
            tick_hz = 30
            """)
        #expect(config.persistence.flushInterval == .milliseconds(2500))
        #expect(config.persistence.criticalFlushDelay == .milliseconds(250))
        #expect(config.persistence.maxWalSizeBytes == 1_048_576)
        #expect(config.persistence.batteryTiers.low == .seconds(120))
        #expect(config.simulation.tickHz == 30)
    }

    @Test func syntaxErrorsCarryTheParsersLineAndColumn() throws {
        let e = try #require(error("[persistence]\nflush_interval_secs = = 3\n"))
        #expect(e.kind == .syntax)
        #expect(e.line == 2)
        #expect(e.column != nil)
        #expect(e.description.hasPrefix("test.toml:2:"))
    }

    @Test func unknownKeysAreNamedWithTheirLineAndTheKnownKeys() throws {
        let e = try #require(error("[persistence]\nflush_interval_secs = 10\nflush_intervl_secs = 3\n"))
        #expect(e.kind == .unknownKey)
        #expect(e.keyPath == "persistence.flush_intervl_secs")
        #expect(e.line == 3)
        #expect(e.message.contains("known keys: flush_interval_secs"))
        #expect(e.description == "test.toml:3: persistence.flush_intervl_secs: \(e.message)")
    }

    @Test func unknownTablesAreUnknownKeys() throws {
        let e = try #require(error("[persistance]\nflush_interval_secs = 10\n"))
        #expect(e.kind == .unknownKey)
        #expect(e.keyPath == "persistance")
        #expect(e.line == 1)
    }

    @Test func wrongTypesNameTheKeyAndWhatWasFound() throws {
        let e = try #require(error("[persistence]\nflush_interval_secs = \"ten\"\n"))
        #expect(e.kind == .typeMismatch)
        #expect(e.keyPath == "persistence.flush_interval_secs")
        #expect(e.line == 2)
        #expect(e.message == "expected a number of seconds, found a string (\"ten\")")

        let b = try #require(error("[persistence]\nbattery_adaptive = 1\n"))
        #expect(b.message == "expected a boolean (true or false), found an integer (1)")

        let t = try #require(error("persistence = 3\n"))
        #expect(t.kind == .typeMismatch)
        #expect(t.keyPath == "persistence")
    }

    @Test func negativeIntervalsAreImpossible() throws {
        let e = try #require(error("[persistence]\ncheckpoint_interval_secs = -5\n"))
        #expect(e.kind == .invalidValue)
        #expect(e.keyPath == "persistence.checkpoint_interval_secs")
        #expect(e.message == "must be between 0.001 and 31536000 seconds, got an integer (-5)")
        #expect(try #require(error("[persistence.battery_tiers]\nlow = 0\n")).keyPath == "persistence.battery_tiers.low")
    }

    @Test func theOperationLogRetentionIsReadAndChecked() throws {
        let config = try StrataConfig.parse("[operation_log]\nretention = \"keep\"\nretention_min_age_secs = 0\n", source: "test.toml")
        #expect(config.operationLog.retention == .keep)
        #expect(config.operationLog.retentionMinAge == .zero)
        let e = try #require(error("[operation_log]\nretention = \"forever\"\n"))
        #expect(e.keyPath == "operation_log.retention")
        #expect(e.message == "must be one of \"acknowledged\", \"keep\", got \"forever\"")
        #expect(try #require(error("[operation_log]\nkeep_days = 3\n")).keyPath == "operation_log.keep_days")
    }

    @Test func theCriticalDelayMustBeBelowTheDerivedIntervals() throws {
        let e = try #require(error("[persistence]\ncritical_flush_delay_ms = 12000\n"))
        #expect(e.kind == .invalidValue)
        #expect(e.keyPath == "persistence.critical_flush_delay_ms")
        #expect(e.message == "must be below persistence.flush_interval_secs (10.0 s), got 12000")

        // With the default battery tiers, 6 s is above the 5 s charging interval.
        let tier = try #require(error("[persistence]\ncritical_flush_delay_ms = 6000\n"))
        #expect(tier.message.contains("persistence.battery_tiers.charging"))
        // Without battery adaptation only flush_interval_secs counts.
        #expect(error("[persistence]\nbattery_adaptive = false\ncritical_flush_delay_ms = 6000\n") == nil)
    }

    @Test func pageSizeMustBeAPowerOfTwo() throws {
        let e = try #require(error("[database]\npage_size = 3000\n"))
        #expect(e.kind == .invalidValue)
        #expect(e.keyPath == "database.page_size")
        #expect(e.message == "must be a power of two between 512 and 65536, got 3000")
        #expect(try #require(error("[database]\npage_size = 131072\n")).message == "must be between 512 and 65536 bytes, got 131072")
    }

    @Test func enumeratedValuesListTheChoices() throws {
        let e = try #require(error("[persistence]\ncritical_durability = \"sometimes\"\n"))
        #expect(e.message == "must be one of \"power_loss\", \"crash\", got \"sometimes\"")
        let vacuum = try #require(error("[database]\nauto_vacuum = \"full\"\n"))
        #expect(vacuum.keyPath == "database.auto_vacuum")
        #expect(vacuum.message == "must be one of \"incremental\", \"none\", got \"full\"")
        #expect(try StrataConfig.parse("[database]\nauto_vacuum = \"none\"\n").database.autoVacuum == .none)
    }

    @Test func powerKeysAreValidated() throws {
        #expect(try #require(error("[persistence.linux]\npower_source = \"dbus\"\n")).message == "must be one of \"upower\", \"fallback\", got \"dbus\"")
        #expect(try #require(error("[persistence.linux]\npower_fallback = \"mains\"\n")).keyPath == "persistence.linux.power_fallback")
        #expect(try #require(error("[persistence.linux]\ndbus_timeout_ms = 0\n")).kind == .invalidValue)
        #expect(try #require(error("[persistence.battery_tiers]\nhigh_above_percent = 150\n")).message == "must be between 0.0 and 100.0 percent, got an integer (150)")
        #expect(try #require(error("[persistence.battery_tiers]\nhigh_above_percent = 30\nlow_below_percent = 40\n")).keyPath == "persistence.battery_tiers.low_below_percent")
        #expect(try #require(error("[persistence]\nvector_clock_every_operations = 0\n")).kind == .invalidValue)
    }

    @Test func otherImpossibleValues() throws {
        #expect(try #require(error("[simulation]\ntick_hz = 0\n")).message == "must be between 1 and 1000 ticks per second, got 0")
        #expect(try #require(error("[database]\npath = \"\"\n")).message == "must not be empty")
        #expect(try #require(error("[writer]\nretry_initial_backoff_ms = 100\nretry_max_backoff_ms = 10\n")).keyPath == "writer.retry_max_backoff_ms")
        #expect(try #require(error("[persistence]\nmax_wal_size_mb = 0\n")).kind == .invalidValue)
    }

    @Test func compactionKeysAreReadAndValidated() throws {
        let config = try StrataConfig.parse("[compaction]\nidle_backlog_mb = 0.5\nbacklog_mb = 2\nmax_backlog_mb = 8\nstep_budget_ms = 10\n")
        #expect(config.compaction.idleBacklogBytes == 512 * 1024)
        #expect(config.compaction.backlogBytes == 2 * 1_048_576)
        #expect(config.compaction.maxBacklogBytes == 8 * 1_048_576)
        #expect(config.compaction.stepBudget == .milliseconds(10))
        let inverted = try #require(error("[compaction]\nbacklog_mb = 100\nmax_backlog_mb = 50\n"))
        #expect(inverted.keyPath == "compaction.backlog_mb")
        #expect(inverted.message == "must not be above max_backlog_mb (50.0), got 100.0")
        #expect(try #require(error("[compaction]\nidle_backlog_mb = 32\n")).keyPath == "compaction.idle_backlog_mb")
        #expect(try #require(error("[compaction]\nmax_backlog_mb = 0\n")).kind == .invalidValue)
        #expect(try #require(error("[compaction]\nstep_budget_ms = 5000\n")).keyPath == "compaction.step_budget_ms")
        #expect(try #require(error("[compaction]\nstep_budget_ms = \"fast\"\n")).kind == .typeMismatch)
        #expect(try #require(error("[compaction]\nbacklog = 1\n")).keyPath == "compaction.backlog")
    }

    @Test func anUnreadableFileSaysSo() {
        #expect(throws: ConfigError.self) { try StrataConfig.load(path: "/nonexistent/strata.toml") }
    }
}

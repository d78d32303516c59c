import Foundation
import GRDB
import Testing
@testable import Strata

/// `strata sim` with scheduled backups every second, SIGKILLed: whenever the kill falls
/// (mid-copy, mid-check, between), the source reopens intact and every file under a
/// backup's name is a finished, verified, clean document.
@Suite(.serialized) struct BackupCrashTests {
    @Test func aKillDuringScheduledBackupsLeavesTheSourceIntactAndOnlyFinishedBackups() throws {
        let directory = TestDirectory()
        let configPath = directory.url.appendingPathComponent("backup.toml").path
        try """
            [database]
            path = "\(directory.databasePath)"

            [backup]
            keep = 3
            interval_secs = 1
            battery_interval_secs = 1
            step_budget_ms = 2
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let folder = BackupFolder(document: StoreLocation(path: directory.databasePath), folder: "")
        var finished = Set<String>()
        for round in 0 ..< 4 {
            let sim = try startSim(directory, ["--config", configPath, "--entities", "5000"])
            // A new backup made by this run, then the kill at a random point of the next ones.
            #expect(eventually(timeout: .seconds(60)) { folder.backups().contains { !finished.contains($0.path) } }, "round \(round)")
            usleep(UInt32.random(in: 0 ... 1_200_000))
            kill(sim.processIdentifier, SIGKILL)
            sim.waitUntilExit()
            #expect(sim.terminationReason == .uncaughtSignal)

            for backup in folder.backups() {
                let inspection = try DatabaseInspection.inspect(path: backup.path)
                #expect(inspection.cleanShutdown == true, "\(backup.path): a finished backup carries its clean mark")
                let queue = try DatabaseQueue(path: backup.path)
                #expect(try queue.read { try String.fetchAll($0, sql: "PRAGMA integrity_check") } == ["ok"], "\(backup.path)")
                try queue.close()
                finished.insert(backup.path)
            }
            var config = StrataConfig()
            config.database.path = directory.databasePath
            let engine = try Engine.open(config: config, logger: quietLogger)
            #expect(engine.recovery.crashed)
            #expect(engine.recovery.session.integrityOK)
            try engine.shutdown()
        }
        #expect(!finished.isEmpty)
        #expect(folder.backups().count <= 3, "keep = 3")
    }
}

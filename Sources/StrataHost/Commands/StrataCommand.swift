import ArgumentParser
import Logging

/// `strata`: the simulation host and tools around a Strata database.
@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Strata: tiered, battery-aware persistence for ECS simulations.",
        subcommands: [SimCommand.self, InspectCommand.self, OplogCommand.self, SyncCommand.self, SyncBenchCommand.self, CheckConfigCommand.self, PowerCommand.self,
                      BenchCommand.self, QueueBenchCommand.self, TortureCommand.self, JobsCommand.self, DoctorCommand.self, MaintainCommand.self,
                      BackupCommand.self, RestoreCommand.self, HistoryCommand.self])
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Sends swift-log output to standard error at `level` (only the executable bootstraps logging).
func bootstrapLogging(level: Logger.Level) {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
}

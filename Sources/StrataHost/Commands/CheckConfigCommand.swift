import ArgumentParser
import Strata

struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a config file and print the effective configuration.")

    @Argument(help: "The TOML file.")
    var file: String

    func run() throws {
        do {
            let config = try StrataConfig.load(path: file)
            print(config.renderTOML(), terminator: "")
        } catch let error as ConfigError {
            printError("strata check-config: \(error)")
            throw ExitCode.failure
        }
    }
}

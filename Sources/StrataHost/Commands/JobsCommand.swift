import ArgumentParser
import Foundation
import Logging
import Strata

/// `strata jobs PATH [list|retry ID|cancel ID|pause|resume]`: a document's job queue.
struct JobsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobs",
        abstract: "List a document's jobs, or retry, cancel, pause or resume them.",
        discussion: """
            list reads the document without opening it (it may be open elsewhere). retry, cancel, pause \
            and resume open it (its owner lock: not while another process has it open), make the change \
            durably and close it. --json prints keys paused, counts and jobs (list), or action, id, changed.
            """)

    enum Action: String, ExpressibleByArgument, CaseIterable {
        case list, retry, cancel, pause, resume
    }

    @Argument(help: "The database file.")
    var path: String

    @Argument(help: "list (default), retry, cancel, pause or resume.")
    var action: Action = .list

    @Argument(help: "The job's id (retry, cancel).")
    var id: Int64?

    @Option(help: "Only jobs in this status (list): pending, processing, failed, dead or done.")
    var status: String?

    @Option(help: "At most this many jobs (list).")
    var limit = 100

    @Flag(help: "Print JSON (a stable interface for scripts).")
    var json = false

    func validate() throws {
        if (action == .retry || action == .cancel) && id == nil { throw ValidationError("\(action.rawValue) needs the job's id") }
        if ![.retry, .cancel].contains(action) && id != nil { throw ValidationError("\(action.rawValue) takes no id") }
        if let status, Job.Status(rawValue: status) == nil {
            throw ValidationError("--status must be one of \(Job.Status.allCases.map(\.rawValue).joined(separator: ", ")), got '\(status)'")
        }
        if limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        do {
            if action == .list { return try list() }
            bootstrapLogging(level: .error)
            var config = StrataConfig()
            config.database.path = path
            guard FileManager.default.fileExists(atPath: path) else {
                throw StoreError(.open, message: "no database file", path: path)
            }
            let engine = try Engine.open(config: config, logger: Logger(label: "strata.jobs"), options: .forTools)
            var changed = true
            var failure: Error?
            do {
                switch action {
                case .retry: changed = try id.map { try engine.jobs.retry($0) } ?? false   // validate() requires the id
                case .cancel: changed = try id.map { try engine.jobs.cancel($0) } ?? false
                case .pause: engine.pauseJobs()
                case .resume: engine.resumeJobs()
                case .list: break
                }
            } catch {
                failure = error
            }
            try engine.shutdown()
            if let failure { throw failure }
            if json {
                let object: [String: Any] = ["action": action.rawValue, "id": id.map { $0 as Any } ?? NSNull(), "changed": changed]
                say(String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self))
            } else if !changed {
                printError("strata jobs: no job \(id.map { "\($0)" } ?? "") that can be \(action == .retry ? "retried (only failed, dead or done ones)" : "cancelled")")
                throw ExitCode.failure
            } else {
                say(action == .pause ? "paused" : action == .resume ? "resumed" : "\(action.rawValue == "retry" ? "retrying" : "cancelled") job \(id.map { "\($0)" } ?? "")")
            }
        } catch let error as StoreError {
            printError("strata jobs: \(error)")
            throw ExitCode.failure
        }
    }

    private func list() throws {
        let listing = try JobListing.read(path: path, status: status.flatMap(Job.Status.init(rawValue:)), limit: limit)
        if json {
            try sayJSON(listing)
            return
        }
        let counts = Job.Status.allCases.map { "\(listing.counts[$0.rawValue] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
        say("queue     \(listing.paused ? "paused" : "running"): \(counts)")
        for job in listing.jobs {
            var line = "  #\(job.id)  \(job.kind)  \(job.status.rawValue)  entity \(job.entity)  attempts \(job.attempts)"
            if let error = job.lastError { line += "  last error: \(error)" }
            say(line)
        }
    }
}

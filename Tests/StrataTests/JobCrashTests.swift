import Foundation
import GRDB
import Testing
@testable import Strata

/// `strata sim` renders a thumbnail for every finished stroke on the engine's worker pool.
/// Killed with SIGKILL while the workers run, then run again: no job is lost, none runs
/// twice unless the kill interrupted it, and every finished stroke ends with its thumbnail.
@Suite(.serialized) struct JobCrashTests {
    func sim(_ directory: TestDirectory, _ extra: [String]) throws -> Process {
        try startSim(directory, ["--entities", "200"] + extra)
    }

    /// "done <stroke> <job>" lines of `--trace-jobs`, complete ones only.
    func renders(_ path: String) -> [(stroke: String, job: Int64)] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropLast(text.hasSuffix("\n") ? 0 : 1).compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "done", let job = Int64(parts[2]) else { return nil }
            return (String(parts[1]), job)
        }
    }

    @Test func aKillWhileWorkersRunLosesNoJobAndRunsNoneTwiceUnlessItInterruptedIt() throws {
        let directory = TestDirectory()
        let config = directory.url.appendingPathComponent("jobs.toml")
        try """
            [persistence]
            critical_flush_delay_ms = 200
            [jobs]
            workers = 3
            keep_finished_secs = 3600
            """.write(to: config, atomically: true, encoding: .utf8)
        let trace = directory.url.appendingPathComponent("jobs.trace").path

        let first = try sim(directory, ["--config", config.path, "--seed", "3", "--activity", "8", "--trace-jobs", trace])
        #expect(eventually(timeout: .seconds(90)) { renders(trace).count >= 4 }, "thumbnails are rendered while the canvas runs")
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        #expect(first.terminationReason == .uncaughtSignal)

        let atKill = try JobListing.read(path: directory.databasePath, limit: 100_000)
        let doneAtKill = Set(atKill.jobs.filter { $0.status == .done }.map(\.id))
        let runningAtKill = Set(atKill.jobs.filter { $0.status == .processing }.map(\.id))
        #expect(!doneAtKill.isEmpty)

        // The next session: interrupted jobs run again, strokes without a job get one.
        let second = try sim(directory, ["--config", config.path, "--seed", "4", "--activity", "8", "--trace-jobs", trace,
                                         "--duration", "4"])
        second.waitUntilExit()
        #expect(second.terminationStatus == 0)

        var settings = StrataConfig()
        settings.database.path = directory.databasePath
        settings.jobs.keepFinished = .seconds(3600)
        let engine = try Engine.open(config: settings, components: [CanvasStrokeStyle.self], logger: quietLogger)
        defer { try? engine.shutdown() }
        let jobs = try engine.jobs.jobs(limit: 100_000)
        let byStroke = Dictionary(grouping: jobs, by: { $0.entity.description })
        let runs = Dictionary(grouping: renders(trace), by: \.job)

        // Never lost: every finished stroke has its job, and a finished job its file.
        let finished = engine.world.entities(with: CanvasStrokeStyle.self).filter(\.value.finished)
            .map { engine.world.id(of: $0.entity)!.description }
        #expect(finished.count >= 4)
        let assets = Set(try engine.assets.assets().compactMap { $0.entity?.description })
        for stroke in finished {
            #expect(byStroke[stroke]?.count == 1, "stroke \(stroke): one job, never lost")
            if byStroke[stroke]?.first?.status == .done { #expect(assets.contains(stroke), "stroke \(stroke): its thumbnail") }
        }
        // Never run twice, unless the kill interrupted the first run.
        for (job, lines) in runs {
            if doneAtKill.contains(job) { #expect(lines.count == 1, "job \(job) was done before the kill: it ran once") }
            #expect(lines.count <= (runningAtKill.contains(job) ? 2 : 1), "job \(job) ran \(lines.count) times")
        }
        for job in jobs where job.status == .done { #expect(runs[job.id] != nil, "job \(job.id) is done: its run is in the trace") }
        #expect(!jobs.contains { $0.status == .processing }, "a clean shutdown leaves nothing processing")
    }
}

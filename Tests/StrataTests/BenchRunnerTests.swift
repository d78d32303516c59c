import Foundation
import Testing
@testable import Strata
@testable import StrataBench

@Suite struct BenchRunnerTests {
    @Test func aSmokeRunWritesJSONAndAReportWithEveryStrategy() throws {
        let directory = TestDirectory()
        var options = BenchOptions()
        options.entities = 20
        options.moving = 10
        options.seconds = 0.5
        options.snapshotEverySecs = 0.2
        options.coverIntervalsUpToSecs = 0   // every strategy runs the same half second
        let results = try BenchRunner.run(options, directory: directory.url.appendingPathComponent("work"), command: "test")
        let names = results.results.map(\.name)
        #expect(names == BenchRunner.strategyNames + ["strata-scaling"])

        let files = try BenchReport.write(results, to: directory.url, name: "smoke")
        #expect(files.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        let json = try String(contentsOfFile: files[0], encoding: .utf8)
        let decoded = try JSONDecoder().decode(BenchResults.self, from: Data(json.utf8), snakeCase: true)
        #expect(decoded.results.count == names.count)
        let markdown = try String(contentsOfFile: files[2], encoding: .utf8)
        for name in names { #expect(markdown.contains("`\(name)`")) }
        #expect(markdown.contains("![sync requests and bytes written"))
        let svg = try String(contentsOfFile: files[1], encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("strata-low"))
    }

    @Test func theStrategiesCountWhatTheyDo() throws {
        let directory = TestDirectory()
        var options = BenchOptions()
        options.entities = 10
        options.moving = 5
        options.seconds = 0.5
        options.strategies = ["baseline", "tick-full", "strata"]
        options.scalingCheck = false
        options.coverIntervalsUpToSecs = 0
        let results = try BenchRunner.run(options, directory: directory.url, command: "test")
        let byName = Dictionary(uniqueKeysWithValues: results.results.map { ($0.name, $0) })
        let baseline = try #require(byName["baseline"])
        #expect(baseline.syncRequests == 0 && baseline.bytesWritten == 0)
        let tickFull = try #require(byName["tick-full"])
        #expect(tickFull.syncsByKind["wal"] == tickFull.ticks, "one WAL sync per tick's FULL commit")
        #expect(tickFull.rowsWritten == tickFull.ticks * 5 + 1, "5 moves a tick, one label edit at tick 0")
        let strata = try #require(byName["strata"])
        #expect(strata.ticks == baseline.ticks, "ticked together")
        #expect(BenchRunner.tickedTogether(options.strategies) == [["baseline", "strata"], ["tick-full"]],
                "the baseline ticks in one loop with Strata, the others alone")
        #expect(strata.syncRequests <= 4, "half a second: at most the first critical flush, then the closing flush (FULL) and its checkpoint (2)")
        #expect(strata.bytesByKind["main_db", default: 0] > 0, "the closing checkpoint copies what the run wrote into the file")
        #expect(strata.risk.crash["derived"] != nil)
    }

    @Test func theWindowedP99IgnoresABurstInOneWindow() {
        let ms = { (n: Int, value: Int) in Array(repeating: Duration.milliseconds(value), count: n) }
        let burst = ms(90, 2) + ms(10, 50)   // a tenth of one window stalls
        let times = ms(100, 1) + burst + ms(100, 3)
        #expect(BenchRunner.windowMedianP99(times, window: 100) == 3)
        #expect(BenchRunner.windowMedianP99(ms(100, 1) + burst + burst + ms(100, 3), window: 100) == 26.5,
                "a cost in every other window moves the median")
        #expect(BenchRunner.windowMedianP99(ms(250, 1), window: 100) == nil, "fewer than three windows")
    }

    /// The short version of `make bench-sweep`: two world sizes, every strategy of a
    /// sweep, the baseline and Strata ticked together, the report and chart written.
    @Test func aSmokeSweepReportsEverySizeAndStrategy() throws {
        let directory = TestDirectory()
        var options = BenchOptions()
        options.moving = 20
        options.seconds = 0.5
        options.coverIntervalsUpToSecs = 0
        options.strategies = BenchRunner.sweepStrategies
        options.strataBacklogBytes = 1024
        let sweep = try BenchRunner.sweep(options, sizes: [20, 200], directory: directory.url.appendingPathComponent("work"),
                                          command: "test")
        #expect(sweep.points.map(\.entities) == [20, 200])
        for point in sweep.points {
            #expect(point.results.map(\.name) == BenchRunner.sweepStrategies)
            let strata = try #require(point.results.first { $0.name == "strata" })
            let baseline = try #require(point.results.first { $0.name == "baseline" })
            #expect(strata.ticks == baseline.ticks, "ticked together")
            #expect(strata.persistedPayloadBytes > 0 && strata.bytesPerPayloadByte > 0)
            #expect(strata.reloadMs != nil && strata.compactionRounds != nil)
            #expect(point.results.first { $0.name == "snapshot-1s" }?.reloadMs != nil)
        }
        let files = try BenchReport.write(sweep, to: directory.url, name: "sweep")
        let markdown = try String(contentsOfFile: files[2], encoding: .utf8)
        #expect(markdown.contains("## N = 200, M = 20") && markdown.contains("What it must show"))
        let svg = try String(contentsOfFile: files[1], encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("snapshot-5s") && svg.contains("<polyline"))
        let json = try String(contentsOfFile: files[0], encoding: .utf8)
        #expect(try JSONDecoder().decode(SweepResults.self, from: Data(json.utf8), snakeCase: true).points.count == 2)
    }

    /// The short version of the canvas sweep: Strata on the canvas beside its snapshots, the
    /// busy and battery runs at the first size, pages per commit by table, the report.
    @Test func aSmokeCanvasSweepMeasuresStrataAndTheSnapshotsOfTheSameCanvas() throws {
        let directory = TestDirectory()
        var options = BenchOptions()
        options.seconds = 1.5
        options.strategies = BenchRunner.canvasStrategies
        let sweep = try BenchRunner.canvasSweep(options, sizes: [30, 300], directory: directory.url.appendingPathComponent("work"),
                                                command: "test")
        #expect(sweep.workload == "canvas")
        #expect(sweep.points.map(\.entities) == [30, 300])
        #expect(sweep.points[0].results.map(\.name) == ["snapshot-1s", "snapshot-5s", "strata", "strata-busy", "strata-battery"])
        #expect(sweep.points[1].results.map(\.name) == BenchRunner.canvasStrategies)
        for point in sweep.points {
            let strata = try #require(point.results.first { $0.name == "strata" })
            let snapshot = try #require(point.results.first { $0.name == "snapshot-1s" })
            #expect(strata.ticks == snapshot.ticks, "one loop")
            #expect(strata.persistedPayloadBytes > 0 && strata.syncRequests > 0)
            #expect((strata.pagesPerCommit ?? 0) > 0 && strata.pagesByTree?["segments"] != nil, "\(strata.pagesByTree ?? [:])")
            #expect(strata.fileBytes.map { $0 > 0 } == true && strata.reloadMs != nil)
            #expect(snapshot.bytesWritten > 0 && snapshot.syncRequests >= 2, "a snapshot at the first tick, written and synced")
        }
        let busy = try #require(sweep.points[0].results.first { $0.name == "strata-busy" })
        let strata = try #require(sweep.points[0].results.first { $0.name == "strata" })
        #expect((busy.operationsPerSec ?? 0) > 5 * (strata.operationsPerSec ?? 0))
        let files = try BenchReport.writeCanvas(sweep, to: directory.url, name: "canvas")
        let markdown = try String(contentsOfFile: files[2], encoding: .utf8)
        #expect(markdown.contains("## 300 shapes") && markdown.contains("Pages per commit by B-tree") && markdown.contains("What it must show"))
        #expect(!BenchReport.canvasChecks(sweep).isEmpty)
    }

    @Test func theTwinTicksWithTheBaselineAndStrata() {
        #expect(BenchRunner.tickedTogether(["baseline", "naive", "strata", "twin"]) == [["baseline", "strata", "twin"], ["naive"]])
        #expect(BenchRunner.tickedTogether(["twin", "baseline"]) == [["baseline", "twin"]])
        #expect(BenchRunner.tickedTogether(["strata", "twin"]) == [["strata"], ["twin"]], "without the baseline, each alone")
    }

    @Test func aRatioSummaryGivesTheMedianTheRangeAndTheRunsWithin10Percent() {
        let summary = RatioSummary([1.2, 0.9, 1.0, 1.05])
        #expect(summary.median == 1.025 && summary.least == 0.9 && summary.most == 1.2)
        #expect(summary.within10Percent == 3 && summary.count == 4)
        #expect(RatioSummary([1.3, 1.0, 1.1]).median == 1.1)
        #expect(RatioSummary([1.3, 1.0, 1.1]).within10Percent == 2, "1.10 counts as within 10 %")
    }

    /// The short version of `make bench-p99`: two sizes, two runs each, three strategies
    /// ticked together in every run, the report written and the target judged per size.
    @Test func aSmokeP99StudyRunsTheThreeTogetherAtEverySize() throws {
        let directory = TestDirectory()
        var options = BenchOptions()
        options.moving = 20
        options.seconds = 0.4
        options.coverIntervalsUpToSecs = 0
        let study = try BenchRunner.p99Study(options, sizes: [20, 100], runs: 2, directory: directory.url.appendingPathComponent("work"),
                                             command: "test")
        #expect(study.points.map(\.entities) == [20, 100])
        #expect(study.points.map(\.moving) == [20, 20])
        for point in study.points {
            #expect(point.runs.count == 2)
            for run in point.runs {
                #expect(run.baselineP99Ms > 0 && run.strataP99Ms > 0 && run.twinP99Ms > 0)
            }
            #expect(point.strataRatios.count == 2 && point.twinRatios.count == 2)
        }
        let checks = BenchReport.p99StudyChecks(study)
        #expect(checks.count == 2 && checks.allSatisfy { $0.met != nil })
        #expect(checks[1].claim.contains("N = 100 (M = 20)"))
        let files = try BenchReport.write(study, to: directory.url, name: "p99")
        #expect(files.map { URL(fileURLWithPath: $0).lastPathComponent } == ["p99.json", "p99.md"], "no chart")
        let markdown = try String(contentsOfFile: files[1], encoding: .utf8)
        #expect(markdown.contains("## N = 100, M = 20: every run") && markdown.contains("What it must show"))
        let json = try String(contentsOfFile: files[0], encoding: .utf8)
        #expect(try JSONDecoder().decode(P99Study.self, from: Data(json.utf8), snakeCase: true).points.count == 2)
        #expect(throws: BenchRunner.BenchError.self) {
            try BenchRunner.p99Study(options, sizes: [20], runs: 0, directory: directory.url, command: "test")
        }
    }

    @Test func dataAtRiskIsTheAgeOfTheOldestUncoveredChange() {
        let t = { (s: Double) in Instant(nanoseconds: Int64(s * 1e9)) }
        let changes = [t(1), t(2), t(3), t(4)]
        let events = [DurabilityLog.Event(at: t(2.5), covers: t(2))]
        #expect(DurabilityLog.risk(at: t(2.4), changes: changes, events: events) == 1.4, "nothing durable yet: since the first change")
        #expect(abs(DurabilityLog.risk(at: t(3.5), changes: changes, events: events) - 0.5) < 1e-9, "changes up to 2 s are safe")
        #expect(DurabilityLog.risk(at: t(2.7), changes: changes, events: events) == 0, "no change since the coverage")
        #expect(DurabilityLog.risk(at: t(0.5), changes: changes, events: events) == 0)
    }
}

extension JSONDecoder {
    func decode<T: Decodable>(_ type: T.Type, from data: Data, snakeCase: Bool) throws -> T {
        keyDecodingStrategy = snakeCase ? .convertFromSnakeCase : .useDefaultKeys
        return try decode(type, from: data)
    }
}

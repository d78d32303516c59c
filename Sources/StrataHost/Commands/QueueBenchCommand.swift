import ArgumentParser
import Foundation
import Logging
import Strata

/// `strata bench-queue`: the job queue's speed, on a new document in a
/// temporary folder. `Benchmarks/queue_compare.py` runs it beside persist-queue and huey.
struct QueueBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-queue",
        abstract: "Measure the job queue: enqueue→claim→complete cycles per second, latencies with a backlog, crash recovery.",
        discussion: """
            1. cycles: one thread enqueues --batch jobs (enqueueSoon: grouped into one FULL commit), claims them and \
            completes them (one NORMAL commit each), --jobs jobs in all; and one job at a time with the blocking \
            enqueue (a FULL commit each). 2. latencies with --queued jobs waiting: enqueue (FULL) and claim + complete \
            (NORMAL), --samples of each. 3. recovery: --queued jobs left processing by a crash; the next open marks \
            them interrupted. Use a release build.
            """)

    @Option(parsing: .unconditional, help: "Jobs in the cycle measurement.")
    var jobs = 20_000

    @Option(parsing: .unconditional, help: "Jobs enqueued, claimed and completed together.")
    var batch = 100

    @Option(parsing: .unconditional, help: "Jobs waiting while latencies are measured.")
    var queued = 100_000

    @Option(parsing: .unconditional, help: "Calls timed for each latency.")
    var samples = 2000

    @Option(help: "Where the document goes (default: a new temporary folder, removed after).")
    var dir: String?

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        guard jobs >= 1, batch >= 1, queued >= 1, samples >= 1, jobs <= 10_000_000, queued <= 10_000_000, samples <= 1_000_000 else {
            throw ValidationError("--jobs, --batch, --queued and --samples must be positive (and at most 10 million)")
        }
    }

    struct Result: Codable {
        var cyclesPerSecond: Double
        var singleCyclesPerSecond: Double
        var enqueueP50Ms: Double, enqueueP99Ms: Double
        var claimP50Ms: Double, claimP99Ms: Double
        var completeP99Ms: Double
        var queued: Int
        var recoveryOpenMs: Double
        var interruptedJobs: Int
        /// The marking alone (one UPDATE at open), for a crash with a few jobs running and with the whole backlog running.
        var recoveryMarkFewMs: Double
        var recoveryMarkAllMs: Double
    }

    func run() throws {
        bootstrapLogging(level: .error)
        let root = URL(fileURLWithPath: dir ?? NSTemporaryDirectory() + "strata-bench-queue-\(getpid())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { if dir == nil { try? FileManager.default.removeItem(at: root) } }
        var config = StrataConfig()
        config.database.path = root.appendingPathComponent("queue.db").path
        config.metrics.countFsyncs = false
        let logger = Logger(label: "strata.bench-queue")
        let clock = MonotonicClock()
        func ms(_ d: Duration) -> Double { d.milliseconds }
        func percentile(_ values: [Duration], _ p: Double) -> Double {
            let sorted = values.sorted()
            return ms(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))])
        }

        var engine = try Engine.open(config: config, logger: logger)
        let single = min(jobs, 2000)
        let total = jobs + single + queued + samples
        var ids: [EntityID] = []
        ids.reserveCapacity(total)
        for start in stride(from: 0, to: total, by: 10_000) {
            for _ in start ..< min(total, start + 10_000) { if let id = engine.world.id(of: engine.world.spawn()) { ids.append(id) } }
            engine.endTick()
        }
        guard engine.flushNow(timeout: .seconds(600)) else { throw ValidationError("the entities were not written in time") }
        var next = 0
        func take(_ n: Int) -> ArraySlice<EntityID> {
            defer { next += n }
            return ids[next ..< next + n]
        }

        // 1. Cycles on one thread.
        let queue = engine.jobs
        var started = clock.now()
        for round in stride(from: 0, to: jobs, by: batch) {
            let count = min(batch, jobs - round)
            for id in take(count) { queue.enqueueSoon("cycle", for: id) }
            let claimed = try queue.claim(kinds: ["cycle"], limit: count)
            try queue.complete(claimed.map(\.id))
        }
        let cyclesPerSecond = Double(jobs) / clock.now().duration(since: started).seconds
        started = clock.now()
        for id in take(single) {
            let job = try queue.enqueue("single", for: id)
            _ = try queue.claim(kinds: ["single"])
            try queue.complete(job.id)
        }
        let singlePerSecond = Double(single) / clock.now().duration(since: started).seconds

        // 2. Latencies with a backlog.
        for id in take(queued) { queue.enqueueSoon("backlog", for: id) }
        _ = try queue.counts()   // after every enqueue above (requests run in order)
        var enqueueTimes: [Duration] = [], claimTimes: [Duration] = [], completeTimes: [Duration] = []
        for id in take(samples) {
            let t0 = clock.now()
            try queue.enqueue("sample", for: id)
            let t1 = clock.now()
            let claimed = try queue.claim(kinds: ["backlog"])
            let t2 = clock.now()
            try queue.complete(claimed.map(\.id))
            let t3 = clock.now()
            enqueueTimes.append(t1.duration(since: t0))
            claimTimes.append(t2.duration(since: t1))
            completeTimes.append(t3.duration(since: t2))
        }

        // 3. A crash with a few jobs running (as many as workers), then one with the whole backlog
        // running: the next open marks them interrupted.
        _ = try engine.jobs.claim(kinds: ["backlog"], limit: 8)
        engine.abandon()
        engine = try Engine.open(config: config, logger: logger)
        let markFew = engine.recovery.interruptedJobsTime
        _ = try engine.jobs.claim(kinds: ["backlog"], limit: queued)
        engine.abandon()
        let t0 = clock.now()
        engine = try Engine.open(config: config, logger: logger)
        let openTime = clock.now().duration(since: t0)
        let result = Result(cyclesPerSecond: cyclesPerSecond, singleCyclesPerSecond: singlePerSecond,
                            enqueueP50Ms: percentile(enqueueTimes, 0.5), enqueueP99Ms: percentile(enqueueTimes, 0.99),
                            claimP50Ms: percentile(claimTimes, 0.5), claimP99Ms: percentile(claimTimes, 0.99),
                            completeP99Ms: percentile(completeTimes, 0.99), queued: queued,
                            recoveryOpenMs: ms(openTime), interruptedJobs: engine.recovery.interruptedJobs,
                            recoveryMarkFewMs: ms(markFew), recoveryMarkAllMs: ms(engine.recovery.interruptedJobsTime))
        try engine.shutdown()

        if json {
            try sayJSON(result)
            return
        }
        say(String(format: "cycles (batches of %d)     %8.0f /s", batch, result.cyclesPerSecond))
        say(String(format: "cycles (one at a time)     %8.0f /s  (enqueue waits for a FULL commit)", result.singleCyclesPerSecond))
        say(String(format: "enqueue, %d queued     p50 %.3f ms, p99 %.3f ms (FULL)", queued, result.enqueueP50Ms, result.enqueueP99Ms))
        say(String(format: "claim, %d queued       p50 %.3f ms, p99 %.3f ms", queued, result.claimP50Ms, result.claimP99Ms))
        say(String(format: "complete                   p99 %.3f ms", result.completeP99Ms))
        say(String(format: "open after a crash         %.1f ms (%d jobs marked interrupted, in %.1f ms; 8 jobs in %.2f ms)",
                   result.recoveryOpenMs, result.interruptedJobs, result.recoveryMarkAllMs, result.recoveryMarkFewMs))
    }
}

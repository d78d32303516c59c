import Foundation
import GRDB
import Testing
@testable import Strata

/// The document's job queue on real files, through the real writer thread.
@Suite struct JobQueueTests {
    func fixture(_ name: String = #function) -> (EngineFixture, TestWallClock) {
        var fixture = EngineFixture(name)
        let wall = TestWallClock()
        fixture.options.wallClock = { wall.milliseconds }
        fixture.config.jobs.maxAttempts = 3
        fixture.config.jobs.retryInitialBackoff = .seconds(1)
        fixture.config.jobs.retryMaxBackoff = .seconds(60)
        return (fixture, wall)
    }

    /// `count` entities, in the file.
    func spawn(_ engine: Engine, _ count: Int) -> [EntityID] {
        let ids = (0 ..< count).map { engine.world.id(of: engine.world.spawn(Title("t\($0)")))! }
        #expect(engine.flushNow())
        return ids
    }

    @Test func enqueueIsIdempotentPerEntityAndKindAndSurvivesARestart() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        let ids = spawn(engine, 2)
        let first = try engine.jobs.enqueue("render", for: ids[0], payload: [1, 2])
        let again = try engine.jobs.enqueue("render", for: ids[0], payload: [9])
        let other = try engine.jobs.enqueue("transcribe", for: ids[0])
        #expect(again.id == first.id, "one job per (entity, kind)")
        #expect(again.payload == [1, 2], "the first one's")
        #expect(other.id != first.id)
        #expect(first.status == .pending && first.attempts == 0 && first.entity == ids[0])
        let stranger = EntityID()
        #expect(throws: JobError.unknownEntity(stranger)) {
            try engine.jobs.enqueue("render", for: stranger, timeout: .milliseconds(50))
        }
        #expect(try engine.jobs.counts() == [.pending: 2])
        engine.abandon()   // a crash right after: the enqueues were committed (FULL)

        let reopened = try fixture.open()
        defer { try? reopened.shutdown() }
        let jobs = try reopened.jobs.jobs()
        #expect(jobs.map(\.kind) == ["render", "transcribe"])
        #expect(jobs.first?.payload == [1, 2])
    }

    @Test func anEnqueueForANewEntityWaitsForItsSpawnToReachTheFile() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let id = engine.world.id(of: engine.world.spawn(Title("new")))!
        engine.jobs.enqueueSoon("render", for: id)   // the tick thread: does not wait
        #expect(try engine.jobs.counts().isEmpty, "not before the spawn is in the file")
        #expect(engine.flushNow())
        #expect(eventually { (try? engine.jobs.counts()) == [.pending: 1] })
    }

    /// On the tick thread a job rides the next critical flush: in its transaction, under its
    /// one sync, with the spawn of its entity; no commit of its own.
    @Test func anEnqueueFromTheTickThreadRidesTheCriticalFlush() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let before = engine.metrics
        let id = engine.world.id(of: engine.world.spawn(Title("new")))!
        engine.jobs.enqueueSoon("render", for: id)
        engine.jobs.enqueueSoon("thumbnail", for: id)
        fixture.clock.advance(by: fixture.config.persistence.criticalFlushDelay)
        engine.endTick()
        #expect(engine.waitForWriter())
        #expect(try engine.jobs.counts() == [.pending: 2], "committed with the batch")
        let after = engine.metrics
        #expect(after.commitCount - before.commitCount == 1, "the spawn and both jobs: one commit")
        #expect(after.fullCommitCount - before.fullCommitCount == 1, "and one sync")
    }

    @Test func aJobRidingAFlushForAnEntityNotInTheFileFailsAloneAndTheFlushCommits() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        engine.world.spawn(Title("kept"))
        engine.jobs.enqueueSoon("render", for: EntityID())   // no such entity: logged, the batch goes on
        #expect(engine.flushNow())
        #expect(try fixture.entityCount() == 1)
        #expect(try engine.jobs.counts().isEmpty)
        #expect(engine.metrics.failedCommits == 0)
    }

    /// A stroke erased right after it ends: its thumbnail's job rides the next batch, which
    /// despawns the entity. The job is not queued, said as such (not as an enqueue that
    /// failed) and counted, at once, not after the request's 60 s.
    @Test func aJobWhoseEntityIsDespawnedBeforeItIsSavedIsNotQueuedAndIsCounted() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let entity = engine.world.spawn(Title("stroke"))
        let id = try #require(engine.world.id(of: entity))
        #expect(engine.flushNow())
        engine.jobs.enqueueSoon("thumbnail", for: id)
        engine.world.despawn(entity)
        #expect(engine.flushNow())
        #expect(eventually(timeout: .seconds(5)) { engine.metrics.jobsNotQueued == 1 }, "\(engine.metrics.jobsNotQueued)")
        #expect(engine.metrics.jobsLost == 0)
        #expect(try engine.jobs.counts().isEmpty)
    }

    @Test func claimsGoByPriorityThenAgeAndNeverTwice() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let ids = spawn(engine, 4)
        let a = try engine.jobs.enqueue("render", for: ids[0])
        let b = try engine.jobs.enqueue("render", for: ids[1])
        let urgent = try engine.jobs.enqueue("render", for: ids[2], priority: 5)
        let otherKind = try engine.jobs.enqueue("transcribe", for: ids[3])
        #expect(try engine.jobs.claim(kinds: ["render"]).map(\.id) == [urgent.id])
        #expect(try engine.jobs.claim(kinds: ["render"], limit: 5).map(\.id) == [a.id, b.id], "FIFO within a priority")
        #expect(try engine.jobs.claim(kinds: ["render"]).isEmpty, "each job once")
        let claimed = try #require(try engine.jobs.claim(kinds: ["render", "transcribe"]).first)
        #expect(claimed.id == otherKind.id)
        #expect(claimed.status == .processing && claimed.attempts == 1)
    }

    @Test func aFailedJobBacksOffInVirtualTimeAndIsDeadAfterMaxAttempts() throws {
        let (fixture, wall) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let id = spawn(engine, 1)[0]
        let job = try engine.jobs.enqueue("render", for: id)
        for (attempt, wait) in [(1, Duration.seconds(1)), (2, .seconds(2))] {
            let claimed = try #require(try engine.jobs.claim(kinds: ["render"]).first)
            #expect(claimed.attempts == attempt)
            #expect(try engine.jobs.fail(job.id, error: "no GPU") == .failed)
            let failed = try #require(try engine.jobs.job(job.id))
            #expect(failed.lastError == "no GPU")
            #expect(failed.notBefore == wall.milliseconds + Int64(wait.milliseconds), "backoff doubles from retry_initial_backoff_ms")
            #expect(try engine.jobs.claim(kinds: ["render"]).isEmpty, "not before the backoff passes")
            wall.advance(by: wait - .milliseconds(1))
            #expect(try engine.jobs.claim(kinds: ["render"]).isEmpty)
            wall.advance(by: .milliseconds(1))
        }
        _ = try #require(try engine.jobs.claim(kinds: ["render"]).first)
        #expect(try engine.jobs.fail(job.id, error: "still no GPU") == .dead, "after max_attempts = 3 runs")
        wall.advance(by: .seconds(3600))
        #expect(try engine.jobs.claim(kinds: ["render"]).isEmpty, "a dead job never runs by itself")
        #expect(try engine.jobs.counts() == [.dead: 1])

        #expect(try engine.jobs.retry(job.id))
        let retried = try #require(try engine.jobs.job(job.id))
        #expect(retried.status == .pending && retried.attempts == 0)
        #expect(try engine.jobs.claim(kinds: ["render"]).count == 1)
        #expect(try engine.jobs.complete(job.id))
        #expect(try engine.jobs.job(job.id) == nil, "keep_finished_secs = 0: the row goes")
    }

    @Test func finishedJobsAreKeptForTheirRetention() throws {
        var (fixture, wall) = fixture()
        fixture.config.jobs.keepFinished = .seconds(60)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let ids = spawn(engine, 2)
        let first = try engine.jobs.enqueue("render", for: ids[0])
        _ = try engine.jobs.claim(kinds: ["render"])
        #expect(try engine.jobs.complete(first.id))
        #expect(try engine.jobs.job(first.id)?.status == .done)
        wall.advance(by: .seconds(61))
        let second = try engine.jobs.enqueue("render", for: ids[1])
        _ = try engine.jobs.claim(kinds: ["render"])
        #expect(try engine.jobs.complete(second.id))
        #expect(try engine.jobs.job(first.id) == nil, "older than keep_finished_secs: gone")
        #expect(try engine.jobs.job(second.id)?.status == .done)
        #expect(try engine.jobs.complete(second.id) == false, "a job completes once")
    }

    @Test func jobsGoWithTheirEntity() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let ids = spawn(engine, 2)
        try engine.jobs.enqueue("render", for: ids[0])
        try engine.jobs.enqueue("transcribe", for: ids[0])
        let kept = try engine.jobs.enqueue("render", for: ids[1])
        engine.world.despawn(engine.world.entity(for: ids[0])!)
        #expect(engine.flushNow())
        #expect(try engine.jobs.jobs().map(\.id) == [kept.id], "ON DELETE CASCADE")
        #expect(try engine.jobs.cancel(entity: ids[1]) == 1)
        #expect(try engine.jobs.counts().isEmpty)
    }

    @Test func aPauseIsKeptAcrossARestart() throws {
        let (fixture, _) = fixture()
        do {
            let engine = try fixture.open()
            let id = spawn(engine, 1)[0]
            try engine.jobs.enqueue("render", for: id)
            engine.pauseJobs()
            #expect(engine.jobs.isPaused)
            try engine.shutdown()
        }
        #expect(try JobListing.read(path: fixture.directory.databasePath).paused)
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.jobs.isPaused, "read back from the document's settings")
        let ran = Counter()
        engine.registerJobHandler("render") { _ in ran.add() }
        engine.startWorkers(1)
        // A worker woken while paused looks at the queue and takes nothing.
        let pool = try #require(engine.workers.pool)
        let looked = pool.looks
        pool.wake()
        #expect(eventually { pool.looks > looked })
        #expect(ran.value == 0)
        #expect(try engine.jobs.counts() == [.pending: 1])
        engine.resumeJobs()
        #expect(eventually { ran.value == 1 })
        #expect(eventually { (try? engine.jobs.counts()) == [:] })
    }

    @Test func jobsACrashLeftRunningAreMarkedInterruptedAtOpenAndRunAgain() throws {
        let (fixture, _) = fixture()
        let job: Job
        do {
            let engine = try fixture.open()
            let id = spawn(engine, 1)[0]
            job = try engine.jobs.enqueue("render", for: id)
            _ = try engine.jobs.claim(kinds: ["render"])
            engine.abandon()
        }
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.interruptedJobs == 1)
        #expect(engine.recovery.description.contains("1 jobs were running"))
        let interrupted = try #require(try engine.jobs.job(job.id))
        #expect(interrupted.status == .failed && interrupted.lastError == "interrupted" && interrupted.attempts == 1)
        #expect(try engine.jobs.claim(kinds: ["render"]).map(\.id) == [job.id], "at once: an interruption is not the job's fault")
    }

    @Test func tenThreadsEnqueueingAThousandEachLoseNothingAndDuplicateNothing() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let ids = spawn(engine, 500)
        let errors = Counter()
        let queue = engine.jobs
        DispatchQueue.concurrentPerform(iterations: 10) { thread in
            for i in 0 ..< 1000 {
                // Every (entity, kind) pair is enqueued by two threads, and twice by each.
                let pair = (thread / 2) * 500 + i % 500
                do {
                    try queue.enqueue("kind\(pair / 500)", for: ids[pair % 500])
                } catch {
                    errors.add()
                }
            }
        }
        #expect(errors.value == 0)
        #expect(try engine.jobs.counts() == [.pending: 2500], "5 kinds × 500 entities, each once")
        #expect(engine.metrics.writerRequests >= 10_000, "every enqueue went through the writer's request lane")
    }

    @Test func workersRunHandlersCompleteAndFailJobs() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let ids = spawn(engine, 20)
        let ran = Counter()
        engine.registerJobHandler("ok") { context in
            #expect(!context.isCancelled)
            ran.add()
        }
        engine.registerJobHandler("bad") { _ in throw JobError.unknownJob(42) }
        engine.startWorkers(3)
        for id in ids { try engine.jobs.enqueue("ok", for: id) }
        let bad = try engine.jobs.enqueue("bad", for: ids[0])
        #expect(eventually { ran.value == 20 })
        #expect(eventually { (try? engine.jobs.job(bad.id))?.status == .failed })
        #expect(try engine.jobs.job(bad.id)?.lastError == "no job 42")
        #expect(eventually { (try? engine.jobs.counts()) == [.failed: 1] }, "the 20 completed rows are gone")
    }

    @Test func cancellationReachesARunningHandler() throws {
        let (fixture, _) = fixture()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        let ids = spawn(engine, 2)
        let started = DispatchSemaphore(value: 0)
        let sawCancel = Counter()
        engine.registerJobHandler("long") { context in
            started.signal()
            while !context.isCancelled { Thread.sleep(forTimeInterval: 0.005) }
            sawCancel.add()
            try context.checkCancellation()
        }
        engine.startWorkers(2)
        let byID = try engine.jobs.enqueue("long", for: ids[0])
        try engine.jobs.enqueue("long", for: ids[1])
        #expect(started.wait(timeout: .now() + 10) == .success)
        #expect(started.wait(timeout: .now() + 10) == .success)
        #expect(try engine.jobs.cancel(byID.id))
        #expect(eventually { sawCancel.value == 1 })
        // Despawning the entity cancels its running job too (the commit tells the pool).
        engine.world.despawn(engine.world.entity(for: ids[1])!)
        #expect(engine.flushNow())
        #expect(eventually { sawCancel.value == 2 })
        #expect(try engine.jobs.counts().isEmpty, "cancelled, not failed")
    }

    @Test func aShutdownWaitsForRunningJobsThenLeavesThemPending() throws {
        var (fixture, _) = fixture()
        fixture.config.jobs.shutdownTimeout = .milliseconds(200)
        let release = DispatchSemaphore(value: 0)
        let job: Job
        do {
            let engine = try fixture.open()
            let id = spawn(engine, 1)[0]
            let started = DispatchSemaphore(value: 0)
            engine.registerJobHandler("stuck") { _ in
                started.signal()
                _ = release.wait(timeout: .now() + 30)
            }
            engine.startWorkers(1)
            job = try engine.jobs.enqueue("stuck", for: id)
            #expect(started.wait(timeout: .now() + 10) == .success)
            try engine.shutdown()
        }
        release.signal()
        let engine = try fixture.open()
        defer { try? engine.shutdown() }
        #expect(engine.recovery.interruptedJobs == 0, "released at shutdown, not interrupted")
        let left = try #require(try engine.jobs.job(job.id))
        #expect(left.status == .pending && left.attempts == 0, "its run not counted")
    }
}

/// A thread-safe count.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }

    @Test(.timeLimit(.minutes(2)))   // without the stop, the shutdown would wait an hour
    func aStopSignalDuringTheShutdownEndsTheWaitForRunningJobs() throws {
        // A job that will not finish, a shutdown that would wait an hour for it: the host's
        // stop (Options.stopWaiting) ends the wait; the job is left pending for next time.
        var fixture = EngineFixture()
        fixture.config.jobs.shutdownTimeout = .seconds(3600)
        let stop = LockedFlag()
        fixture.options.stopWaiting = { stop.value }
        let engine = try fixture.open()
        let id = engine.world.id(of: engine.world.spawn(Title("slow")))!
        #expect(engine.flushNow())
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        engine.registerJobHandler("slow") { _ in
            started.signal()
            release.wait()
        }
        _ = try engine.jobs.enqueue("slow", for: id)
        engine.startWorkers(1)
        started.wait()
        stop.set()
        try engine.shutdown()   // returns: the hour-long wait was cut short
        release.signal()
        let listing = try JobListing.read(path: fixture.directory.databasePath)
        #expect(listing.counts == ["pending": 1], "left pending for the next session: \(listing.counts)")
    }
}

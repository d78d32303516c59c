import CoreMetrics
import Foundation
import GRDB
import Logging
import Synchronization

extension Engine {
    /// Knobs that are not configuration: the clock, the observer, what a tool allows; the
    /// package's own benchmarks and tests set the rest (the VFS, the writer's timing, test hooks).
    public struct Options: Sendable {
        /// The source of "now"; tests pass a `ManualClock` (`StrataTesting`).
        public var clock: any StrataClock = MonotonicClock()
        /// Wall-clock Unix milliseconds, for the operation log's hybrid timestamps.
        public var wallClock: @Sendable () -> Int64 = { unixMilliseconds() }
        /// A registered SQLite VFS to open the database with (`file:PATH?vfs=NAME`).
        package var vfs: String?
        /// Time the writer is allowed to commit a batch, subtracted from each deadline.
        package var commitBudget: Duration = .milliseconds(50)
        /// While batches keep coming (within `writerPollLinger` of the last one), the
        /// writer looks for the next batch this often instead of being woken by the tick
        /// thread, so a flush tick makes no system call. Also subtracted from each
        /// deadline. Zero: the tick thread always wakes the writer.
        package var writerPollInterval: Duration = .milliseconds(100)
        /// How long the writer keeps polling after the last batch before it parks (and
        /// the next flush wakes it).
        package var writerPollLinger: Duration = .seconds(5)
        /// Runs on the writer connection after the engine's pragmas.
        package var prepareConnection: (@Sendable (GRDBDatabase) throws -> Void)?
        /// Told of every commit, checkpoint and compaction step, on the writer thread.
        public var observer: (any PersistenceObserver)?
        /// Always compact with this method instead of the cheaper one (benchmarks, tests).
        package var compactionMethod: CompactionPolicy.Method?
        /// Bytes of records the first compaction step consumes; later steps adapt to
        /// `compaction.step_budget_ms` (tests use a tiny one for rounds of many steps).
        package var compactionStepBytes = 256 * 1024
        /// Reads the free bytes on the filesystem of the document at a path; nil: `statvfs`
        /// (tests simulate a disk filling up and emptying).
        package var freeDiskSpace: (@Sendable (String) -> Int?)?
        /// Where the figures go through swift-metrics; nil: the factory the host
        /// bootstrapped (`MetricsSystem.factory`, no-op handlers if none).
        public var metricsFactory: (any MetricsFactory)?
        /// Once a session, when the user is idle on mains power, check the whole file
        /// (`PRAGMA integrity_check`) on a connection and thread of its own (`IntegrityCheckTask.swift`).
        package var idleIntegrityCheck = true
        /// A missing file is a new, empty document. False (a tool working on a document
        /// that must exist): the open fails with ``StoreError/Code/open``.
        public var createIfMissing = true
        /// A file found corrupt (at the open, or later) is set aside, salvaged and replaced.
        /// False (a tool that must not change what it was not asked to): the open fails
        /// with ``StoreError/Code/corrupt`` and the file is left as it is; only a repair
        /// (`strata maintain --repair`, or a host's open) replaces it.
        public var replaceIfCorrupt = true
        /// Polled (every 100 ms) by calls that wait on the writer (the job queue's, the
        /// asset store's): true ends the wait with an error, so that a host stopping on a
        /// signal is never held by one (`strata sim` returns whether SIGINT or SIGTERM came).
        public var stopWaiting: @Sendable () -> Bool = { false }

        public init() {}
    }
}

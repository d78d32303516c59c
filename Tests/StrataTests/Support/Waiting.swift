import Foundation
import GRDB
@testable import Strata

/// Counts the transactions SQLite commits on the writer connection, and can hold a
/// commit until released (a deliberately stalled writer).
final class CommitProbe: TransactionObserver, @unchecked Sendable {
    // @unchecked Sendable: counters are under `lock`; semaphores are thread-safe.
    private let lock = NSLock()
    private var commits = 0
    private var stallNext = false
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    var commitCount: Int { lock.withLock { commits } }
    func stallNextCommit() { lock.withLock { stallNext = true } }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { true }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseWillCommit() throws {
        let stall = lock.withLock { () -> Bool in
            defer { stallNext = false }
            return stallNext
        }
        if stall {
            entered.signal()
            release.wait()
        }
    }
    func databaseDidCommit(_ db: Database) { lock.withLock { commits += 1 } }
    func databaseDidRollback(_ db: Database) {}

    func install(on options: inout Engine.Options) {
        options.prepareConnection = { db in db.add(transactionObserver: self, extent: .databaseLifetime) }
    }
}

/// Polls `condition` until it holds or `timeout` passes (for events on other threads
/// or processes; never to let time pass).
func eventually(timeout: Duration = .seconds(20), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.002)
    }
    return try condition()
}

final class LockedFlag: @unchecked Sendable {
    // @unchecked Sendable: `flag` is under `lock`.
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var value: Bool { lock.withLock { flag } }
}

/// A wall clock the test moves (Unix milliseconds): backoffs in virtual time.
final class TestWallClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now: Int64

    init(start: Int64 = 1_800_000_000_000) { now = start }

    var milliseconds: Int64 { lock.withLock { now } }
    func advance(by duration: Duration) { lock.withLock { now += Int64(duration.milliseconds) } }
}

import Foundation
import Glibc
import Logging
import StrataPQ

/// The instance's one `LISTEN`: a connection and a thread of its own, on the channel every
/// push notifies (``SyncSchema/changesChannel``: the document's md5 and newest position), fanned out
/// to the pulls waiting here. PostgreSQL sees one listener per instance, however many
/// devices wait. Lost, it is made again with backoff, and every waiting pull is woken
/// (what was pushed meanwhile is unknown): they query again.
final class ChangeFeed: @unchecked Sendable {
    // @unchecked Sendable: `stopping`, `connected` and `notificationCount` are under `lock`; the connection
    // belongs to the thread.
    private let url: String
    private let timeout: Duration
    private let waiters: DocumentWaiters
    private let logger: Logger
    private let lock = NSLock()
    private var stopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    private var connected = false
    private var notificationCount = 0

    /// Notifications read since start.
    var notifications: Int { lock.withLock { notificationCount } }

    init(url: String, timeout: Duration, waiters: DocumentWaiters, logger: Logger) {
        self.url = url
        self.timeout = timeout
        self.waiters = waiters
        self.logger = logger
    }

    func start() {
        let thread = Thread { [self] in run(); finished.signal() }
        thread.name = "strata.server.feed"
        self.thread = thread
        thread.start()
    }

    func stop() {
        guard thread != nil else { return }
        lock.withLock { stopping = true }
        finished.wait()
        thread = nil
    }

    var isConnected: Bool { lock.withLock { connected } }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func run() {
        var backoff = 0.25
        while !isStopping {
            do {
                let connection = try PGConnection(conninfo: url, timeout: timeout)
                defer { connection.close() }
                try connection.query("LISTEN \(SyncSchema.changesChannel)")
                lock.withLock { connected = true }
                logger.info("listening for changes")
                waiters.wakeAll()   // pushed while not listening: unknown
                backoff = 0.25
                while !isStopping {
                    var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&descriptor, 1, 250)
                    if ready < 0 && errno != EINTR { throw PGConnectionError(.unreachable, "poll failed while listening") }
                    guard ready > 0 else { continue }
                    let news = try connection.takeNotifications()
                    lock.withLock { notificationCount += news.count }
                    // By document: the newest position told (nil when a payload does not say).
                    var newest: [String: Int64?] = [:]
                    for notification in news {
                        let parts = notification.payload.split(separator: " ")
                        guard let key = parts.first.map(String.init) else { continue }
                        let position = parts.count > 1 ? Int64(parts[1]) : nil
                        if let known = newest[key] {
                            newest[key] = known.flatMap { a in position.map { max(a, $0) } }
                        } else {
                            newest[key] = .some(position)
                        }
                    }
                    for (key, position) in newest { waiters.wake(key, newest: position) }
                }
            } catch {
                let wasConnected = lock.withLock { () -> Bool in
                    defer { connected = false }
                    return connected
                }
                if wasConnected { logger.warning("the change feed was lost: \(error)") }
                waiters.wakeAll()
                var left = backoff
                while left > 0 && !isStopping {
                    Thread.sleep(forTimeInterval: min(left, 0.25))
                    left -= 0.25
                }
                backoff = min(backoff * 2, 10)
            }
        }
        lock.withLock { connected = false }
    }
}

import CLibPQ
import Foundation
import Glibc
import Strata
import StrataPQ

/// Listens for a document's notifications on a connection and a thread of its own
/// (`strata.sync.listen`): `LISTEN` on the document's channel, then a wait on the socket
/// (and on a pipe that ``stop()`` writes to, so a stop never waits for the server). Every
/// batch of notifications read at once is one ``ListenEvent/changed``: a storm of NOTIFYs
/// costs the client one pull per wake, not one per notification.
///
/// A lost connection is reported (``ListenEvent/lost(_:)``) and made again with backoff
/// (`retryInitial` doubling to `retryMax`); each time it listens again it says so
/// (``ListenEvent/listening``), since what was pushed meanwhile is unknown. The wait
/// costs the server no query: an idle device's only queries are its safety polls. Over
/// TCP, keepalives find a server that vanished without closing the socket.
final class PGListener: @unchecked Sendable {
    // @unchecked Sendable: `stopped` is guarded by `lock`; the connection is the thread's own.
    private let conninfo: String
    private let document: String
    private let timeout: Duration
    private let retryInitial: Duration
    private let retryMax: Duration
    private let changed: @Sendable (ListenEvent) -> Void
    private let lock = NSLock()
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)
    /// Written by ``stop()``: wakes the wait.
    private var wakeRead: Int32 = -1, wakeWrite: Int32 = -1

    init(url: String, document: String, timeout: Duration, retryInitial: Duration = .milliseconds(250),
         retryMax: Duration = .seconds(30), changed: @escaping @Sendable (ListenEvent) -> Void) {
        self.conninfo = Self.withKeepalives(url)
        self.document = document
        self.timeout = timeout
        self.retryInitial = retryInitial
        self.retryMax = retryMax
        self.changed = changed
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            wakeRead = fds[0]
            wakeWrite = fds[1]
            _ = fcntl(wakeRead, F_SETFL, fcntl(wakeRead, F_GETFL) | O_NONBLOCK)
        }
    }

    deinit {
        if wakeRead >= 0 { Glibc.close(wakeRead) }
        if wakeWrite >= 0 { Glibc.close(wakeWrite) }
    }

    func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "strata.sync.listen"
        thread.start()
    }

    /// Ends the thread; waits for it at most the request timeout.
    func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        _ = finished.wait(timeout: .now() + timeout.seconds + 1)
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func run() {
        var failures = 0
        var reported: String?
        while !isStopped {
            do {
                let connection = try PGConnection(conninfo: conninfo, timeout: timeout)
                try connection.query("LISTEN \(try SyncSchema.channel(of: document, on: connection))")
                failures = 0
                reported = nil
                changed(.listening)
                try wait(on: connection)
                connection.close()
            } catch {
                guard !isStopped else { return }
                let reason = "\(error)"
                if reported != reason { changed(.lost(reason)) }
                reported = reason
                failures += 1
                let factor = Double(1 << min(failures - 1, 30))
                pause(min(retryInitial * factor, retryMax))
            }
        }
    }

    /// Reads notifications until stopped (returns) or the connection fails (throws).
    private func wait(on connection: PGConnection) throws {
        while !isStopped {
            var descriptors = [pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                throw SyncError(.unreachable, "poll failed while listening")
            }
            if descriptors[1].revents != 0 { return }
            if descriptors[0].revents != 0 {
                if try !connection.takeNotifications().isEmpty { changed(.changed) }
            }
        }
    }

    /// Waits `duration`, or less if stopped.
    private func pause(_ duration: Duration) {
        var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(max(1, duration.milliseconds.rounded(.up))))
    }

    /// `url` with TCP keepalives (10 s idle, 5 s between probes, 3 probes) unless it sets
    /// them: a listening connection waits without sending, so only keepalives notice a
    /// server gone without a word. A Unix socket ignores them.
    static func withKeepalives(_ url: String) -> String {
        guard !url.contains("keepalives") else { return url }
        return url + (url.contains("?") ? "&" : "?") + "keepalives=1&keepalives_idle=10&keepalives_interval=5&keepalives_count=3"
    }
}

import Foundation
import Logging
import Synchronization

/// Keeps the machine's connectivity up to date, off the tick thread and off the sync's:
/// NetworkManager's `State` and `Connectivity` over D-Bus (`NetworkProbe`), read at
/// once when its `StateChanged` or `PropertiesChanged` signal arrives and every `poll`
/// otherwise, every call bounded by `timeout`.
///
/// Offline: a state below "connected (local)" (disconnected, asleep, connecting…) or a
/// connectivity check that found no network. Unknown: no NetworkManager (or no bus);
/// the sync then finds out by trying the server, with backoff.
///
/// States: created ──start──▶ running ──stop──▶ stopped.
public final class NetworkMonitor: ConnectivitySource, @unchecked Sendable {
    // @unchecked Sendable: `current`, `reason` and `stopping` are guarded by `lock`;
    // `changes` is atomic; the rest is immutable.
    private let lock = Lock()
    private var current = Connectivity.unknown
    private var reason = "not read yet"
    private var stopping = false
    private var started = false
    private let changes = Atomic<Int>(0)
    private let firstReading = DispatchSemaphore(value: 0)
    private let timeout: Duration
    private let poll: Duration
    private let logger: Logger
    private let busAddress: String?

    /// `busAddress`: a D-Bus address to use instead of the system bus.
    public init(timeout: Duration = .milliseconds(500), poll: Duration = .seconds(5), busAddress: String? = nil, logger: Logger) {
        self.busAddress = busAddress
        self.timeout = timeout
        self.poll = poll
        self.logger = logger
    }

    public var connectivity: Connectivity { lock.withLock { current } }
    public var changeCount: Int { changes.load(ordering: .acquiring) }
    /// Why the connectivity is unknown, or NetworkManager's state and connectivity.
    public var detail: String { lock.withLock { reason } }

    /// Starts the monitor thread and waits for its first reading (a few D-Bus timeouts at
    /// most): a sync started next must not take "not read yet" for "online".
    public func start() {
        let first = lock.withLock { () -> Bool in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let thread = Thread { [self] in run() }
        thread.name = "strata.network"
        thread.start()
        _ = firstReading.wait(timeout: .now() + (timeout * 4).seconds)
    }

    /// Asks the thread to stop; returns at once (it ends within ~100 ms).
    public func stop() {
        lock.withLock { stopping = true }
    }

    private var shouldStop: Bool { lock.withLock { stopping } }

    private func run() {
        let probe = NetworkProbe(timeout: timeout, busAddress: busAddress)
        var reads = 0
        while !shouldStop {
            publish(probe.read())
            reads += 1
            if reads == 1 { firstReading.signal() }
            let until = ContinuousClock.now + poll
            while !shouldStop && ContinuousClock.now < until {
                if probe.waitForChange(timeout: min(.milliseconds(100), until - .now)) { break }
            }
        }
    }

    private func publish(_ reading: (Connectivity, String)) {
        let changed = lock.withLock { () -> Bool in
            defer { current = reading.0; reason = reading.1 }
            return current != reading.0
        }
        guard changed else { return }
        changes.wrappingAdd(1, ordering: .releasing)
        logger.info("network: \(reading.0.rawValue) (\(reading.1))")
    }
}

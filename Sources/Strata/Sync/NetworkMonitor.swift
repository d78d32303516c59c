import CStrataNetwork
import Foundation
import Logging
import Synchronization

/// Keeps the machine's connectivity up to date, off the tick thread and off the sync's:
/// NetworkManager's `State` and `Connectivity` over D-Bus (`strata_network.c`), read at
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
        let probe = strata_network_probe_new(Int32(clamping: Int(timeout.milliseconds.rounded())), busAddress)
        defer { strata_network_probe_free(probe) }
        var reads = 0
        while !shouldStop {
            var raw = strata_network_reading()
            strata_network_probe_read(probe, &raw)
            publish(Self.interpret(raw))
            reads += 1
            if reads == 1 { firstReading.signal() }
            let until = ContinuousClock.now + poll
            while !shouldStop && ContinuousClock.now < until {
                if strata_network_probe_wait(probe, Int32(clamping: Int(min(.milliseconds(100), until - .now).milliseconds))) != 0 { break }
            }
        }
    }

    static func interpret(_ raw: strata_network_reading) -> (Connectivity, String) {
        var copy = raw
        let message = withUnsafeBytes(of: &copy.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch raw.status {
        case STRATA_NETWORK_OK:
            // NMState 50 connected (local), 60 (site), 70 (global); NMConnectivityState 1: none.
            let online = raw.state >= 50 && raw.connectivity != 1
            return (online ? .online : .offline, "NetworkManager state \(raw.state), connectivity \(raw.connectivity)")
        case STRATA_NETWORK_NO_BUS: return (.unknown, "no system bus: \(message)")
        case STRATA_NETWORK_NO_DAEMON: return (.unknown, "no NetworkManager on the system bus")
        case STRATA_NETWORK_NOT_ANSWERING: return (.unknown, "NetworkManager is not answering: \(message)")
        default: return (.unknown, "NetworkManager error: \(message)")
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

import Foundation
import Logging
import Synchronization

/// Keeps the latest ``PowerReading`` up to date, off the tick thread.
///
/// A dedicated thread reads UPower every `power_poll_interval_secs` and as soon as a
/// change signal arrives (battery, charger, profile). D-Bus calls can block (a hung
/// daemon makes each call wait for its timeout), so they never run on the tick thread:
/// the tick thread reads `changeCount` (an atomic) every tick, and ``latest`` (under a
/// lock) only when the count moved.
///
/// States: created ──start──▶ running ──stop──▶ stopped.
public final class PowerMonitor: @unchecked Sendable {
    // @unchecked Sendable: `reading` and `stopping` are only touched under `lock`;
    // `changes` is atomic (and only written under `lock`); `config` and `logger` are
    // immutable.
    private let lock = Lock()
    private var reading: PowerReading
    /// Read lock-free by every end of tick (``Engine/endTick()``), which copies
    /// ``latest`` only when it moved.
    @usableFromInline let changes = Atomic<Int>(0)
    private var stopping = false
    private var running = false
    private let config: PowerSourceConfig
    private let logger: Logger

    public init(config: PowerSourceConfig, logger: Logger) {
        self.config = config
        self.logger = logger
        let initial: PowerReading.Source = config.source == .fallback ? .fallback : .unavailable(reason: "not read yet")
        reading = PowerReading(source: initial, state: config.fallback.state)
    }

    /// The latest reading (any thread; O(1)).
    public var latest: PowerReading { lock.withLock { reading } }

    /// How many times the reading has changed since start.
    @inlinable
    package var changeCount: Int { changes.load(ordering: .acquiring) }

    /// Starts the monitor thread; the first reading follows within a D-Bus timeout or two.
    public func start() {
        lock.withLock {
            precondition(!running, "power monitor started twice")
            running = true
        }
        guard config.source == .upower else { return }
        let thread = Thread { [self] in run() }
        thread.name = "strata.power"
        thread.start()
    }

    func startIfNeeded() {
        if !lock.withLock({ running }) { start() }
    }

    /// Asks the thread to stop; returns at once (the thread ends within ~200 ms).
    public func stop() {
        lock.withLock { stopping = true }
    }

    private var shouldStop: Bool { lock.withLock { stopping } }

    private func run() {
        let probe = UPowerProbe(timeout: config.dbusTimeout)
        while !shouldStop {
            publish(probe.read(fallback: config.fallback.state))
            // Wait for the poll interval, in slices so a stop is noticed, or for a change.
            let until = ContinuousClock.now + config.pollInterval
            while !shouldStop && ContinuousClock.now < until {
                if probe.waitForChange(timeout: min(.milliseconds(200), until - ContinuousClock.now)) { break }
            }
        }
    }

    /// Makes `new` the latest reading (the monitor's thread; tests).
    func publish(_ new: PowerReading) {
        let previous = lock.withLock { () -> PowerReading in
            let old = reading
            if old != new {
                reading = new
                changes.wrappingAdd(1, ordering: .releasing)
            }
            return old
        }
        guard previous != new else { return }
        if previous.source != new.source {
            switch new.source {
            case .upower(let version): logger.info("power: reading UPower \(version)")
            case .unavailable(let reason): logger.warning("power: \(reason); assuming \(config.fallback.rawValue)")
            case .fallback: break
            }
        }
        logger.info("power: \(new.state)")
    }
}

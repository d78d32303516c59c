import Foundation
import Logging
import Synchronization

/// Polls Linux memory pressure on its own thread and counts warnings.
///
/// The tick thread reads `warningCount` (`Engine.attach(_:)` does, at every
/// `endTick`), and flushes when it moves. Where the kernel has neither PSI nor a cgroup
/// v2 `memory.events`, the monitor reports itself unavailable and never warns; the
/// host's own low-memory signal can still call ``warn(reason:)``.
///
/// States: created ──start──▶ running ──stop──▶ stopped.
public final class MemoryPressureMonitor: @unchecked Sendable {
    /// The files read.
    public struct Sources: Sendable {
        public var psiPath: String?
        public var memoryEventsPath: String?

        public init(psiPath: String?, memoryEventsPath: String?) {
            self.psiPath = psiPath
            self.memoryEventsPath = memoryEventsPath
        }

        /// This process's: `/proc/pressure/memory`, and its cgroup's `memory.events`.
        public static var system: Sources {
            let cgroup = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8))
                .flatMap(MemoryPressure.cgroupPath(procSelfCgroup:))
            return Sources(psiPath: "/proc/pressure/memory",
                           memoryEventsPath: cgroup.map { "/sys/fs/cgroup\($0 == "/" ? "" : $0)/memory.events" })
        }
    }

    // @unchecked Sendable: `lastReason`, `stopping` and `running` are only touched under
    // `lock`; `warnings` is atomic (and only written under `lock`); the rest is
    // immutable, or owned by the monitor thread.
    private let lock = Lock()
    /// Read lock-free by every end of tick (``Engine/endTick()``).
    @usableFromInline let warnings = Atomic<Int>(0)
    private var lastReason: String?
    private var stopping = false
    private var running = false
    private let sources: Sources
    private let pollInterval: Duration
    private let logger: Logger
    private var detector: MemoryPressure.Detector

    public init(thresholdPercent: Double, pollInterval: Duration, sources: Sources = .system, logger: Logger) {
        self.sources = sources
        self.pollInterval = pollInterval
        self.logger = logger
        detector = MemoryPressure.Detector(thresholdPercent: thresholdPercent)
    }

    /// Warnings so far (any thread).
    @inlinable
    package var warningCount: Int { warnings.load(ordering: .acquiring) }

    /// Why the last warning fired.
    public var lastWarning: String? { lock.withLock { lastReason } }

    /// Whether any source can be read on this machine.
    public var isAvailable: Bool {
        [sources.psiPath, sources.memoryEventsPath].contains { $0.map { FileManager.default.isReadableFile(atPath: $0) } ?? false }
    }

    /// Counts a warning from the host (its own low-memory signal).
    public func warn(reason: String) {
        lock.withLock {
            warnings.wrappingAdd(1, ordering: .releasing)
            lastReason = reason
        }
        logger.warning("\(reason): flushing every tier")
    }

    public func start() {
        lock.withLock {
            precondition(!running, "memory pressure monitor started twice")
            running = true
        }
        guard isAvailable else {
            logger.info("memory pressure: neither PSI nor cgroup memory.events readable; host warnings only")
            return
        }
        let thread = Thread { [self] in run() }
        thread.name = "strata.memory"
        thread.start()
    }

    func startIfNeeded() {
        if !lock.withLock({ running }) { start() }
    }

    public func stop() { lock.withLock { stopping = true } }

    private func run() {
        while !lock.withLock({ stopping }) {
            let psi = sources.psiPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
            let events = sources.memoryEventsPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
            if let reason = detector.update(someAvg10: psi.flatMap(MemoryPressure.someAvg10(psi:)),
                                            events: events.map(MemoryPressure.events)) {
                warn(reason: reason)
            }
            // Sleep out the interval in slices, so a stop is noticed within 200 ms.
            let until = ContinuousClock.now + pollInterval
            while ContinuousClock.now < until && !lock.withLock({ stopping }) {
                Thread.sleep(forTimeInterval: min(0.2, (until - ContinuousClock.now).seconds))
            }
        }
    }
}

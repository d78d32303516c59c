import CoreMetrics
import Foundation

/// Reports the engine's figures through swift-metrics, so a host that bootstraps a
/// metrics backend (`MetricsSystem.bootstrap`: Prometheus, StatsD, OpenTelemetry…) gets
/// them without glue.
///
/// Thread: `strata.metrics`, its own, waking every `[metrics] export_interval_ms`. Each
/// wake reads a snapshot (``Engine/metrics``, the sync's state, the job queue's counts)
/// and reports what moved: counters by how much they grew since the last report, gauges
/// as they are (`MetricsExporter+Readings.swift` lists every figure). Durations are
/// recorded as they happen, on the writer thread (``MetricsTimers``). A backend is
/// never called from the tick thread.
final class MetricsExporter: @unchecked Sendable {
    // @unchecked Sendable: everything but `lock`'s state belongs to the exporter's thread
    // (and to `stop`, once that thread has ended).

    /// Where the figures come from; each is read on the exporter's thread.
    struct Sources: Sendable {
        /// The snapshot (from the pieces that hold it, not the engine: it may be gone).
        var metrics: @Sendable () -> PersistenceMetrics
        /// Jobs by status (a query through the writer's request lane), if the host wants them.
        var jobs: (@Sendable () -> [Job.Status: Int]?)?
    }

    /// The sync's state and outbox size, while a sync runs.
    typealias SyncSource = @Sendable () -> (state: SyncState, outbox: Int)

    private let sources: Sources
    private var sync: SyncSource?   // under `lock`
    private let factory: any MetricsFactory
    private let interval: Duration
    private var counters: [Reading.Key: Counter] = [:]
    private var floatingCounters: [Reading.Key: FloatingPointCounter] = [:]
    private var gauges: [Reading.Key: Gauge] = [:]
    /// What each counter stood at when it was last reported.
    private var reported: [Reading.Key: Double] = [:]
    private let lock = Lock()
    /// Held while reporting: ``exportNow()`` and ``report(_:)`` may come from other threads.
    private let reporting = Lock()
    private var stopping = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(sources: Sources, factory: any MetricsFactory, interval: Duration) {
        self.sources = sources
        self.factory = factory
        self.interval = interval
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "strata.metrics"
        self.thread = thread
        thread.start()
    }

    /// Reports the sync's figures from now on (nil: no more; the engine's sync stopped).
    func setSyncSource(_ source: SyncSource?) {
        lock.withLock { sync = source }
    }

    /// Stops the thread after one last report (the caller's thread waits for it).
    func stop() {
        guard thread != nil else { return }
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
        finished.wait()
        thread = nil
    }

    /// Reports `metrics` alone, without the queries (after the writer has stopped).
    func report(_ metrics: PersistenceMetrics) {
        report(Self.readings(metrics) + Self.readings(replication: metrics.replication))
    }

    private func run() {
        while true {
            let deadline = Date(timeIntervalSinceNow: interval.seconds)
            let stop = lock.withLock {
                while !stopping, lock.wait(until: deadline) {}
                return stopping
            }
            exportNow()
            if stop { break }
        }
        finished.signal()
    }

    /// One report of every figure (the exporter's thread; tests call it directly).
    func exportNow() {
        let metrics = sources.metrics()
        var readings = Self.readings(metrics) + Self.readings(replication: metrics.replication)
        if let jobs = sources.jobs?() { readings += Self.readings(jobs: jobs) }
        if let sync = lock.withLock({ sync })?() { readings += Self.readings(sync: sync.state, outbox: sync.outbox) }
        report(readings)
    }

    private func report(_ readings: [Reading]) {
        reporting.withLock { reportLocked(readings) }
    }

    private func reportLocked(_ readings: [Reading]) {
        for reading in readings {
            switch reading.kind {
            case .counter:
                let grew = reading.value - (reported[reading.key] ?? 0)
                // A figure that went down belongs to a new session (a document switch): start over.
                reported[reading.key] = reading.value
                let made = counter(reading.key)   // made at the first report, so a backend lists it at 0
                guard grew > 0 else { continue }
                made.increment(by: Int64(grew))
            case .floatingCounter:
                let grew = reading.value - (reported[reading.key] ?? 0)
                reported[reading.key] = reading.value
                let made = floatingCounter(reading.key)
                guard grew > 0 else { continue }
                made.increment(by: grew)
            case .gauge:
                gauge(reading.key).record(reading.value)
            }
        }
    }

    private func counter(_ key: Reading.Key) -> Counter {
        if let existing = counters[key] { return existing }
        let made = Counter(label: key.label, dimensions: key.dimensions, factory: factory)
        counters[key] = made
        return made
    }

    private func floatingCounter(_ key: Reading.Key) -> FloatingPointCounter {
        if let existing = floatingCounters[key] { return existing }
        let made = FloatingPointCounter(label: key.label, dimensions: key.dimensions, factory: factory)
        floatingCounters[key] = made
        return made
    }

    private func gauge(_ key: Reading.Key) -> Gauge {
        if let existing = gauges[key] { return existing }
        let made = Gauge(label: key.label, dimensions: key.dimensions, factory: factory)
        gauges[key] = made
        return made
    }
}

/// One figure as swift-metrics sees it.
struct Reading {
    struct Key: Hashable {
        var label: String
        var dimensionPairs: [String]   // name, value, name, value… (tuples are not Hashable)
        var dimensions: [(String, String)] {
            stride(from: 0, to: dimensionPairs.count, by: 2).map { (dimensionPairs[$0], dimensionPairs[$0 + 1]) }
        }
    }

    enum Kind { case counter, floatingCounter, gauge }

    var key: Key
    var kind: Kind
    var value: Double

    static func counter(_ label: String, _ value: Int, _ dimensions: (String, String)...) -> Reading {
        Reading(key: Key(label: label, dimensionPairs: dimensions.flatMap { [$0.0, $0.1] }), kind: .counter, value: Double(value))
    }

    static func seconds(_ label: String, _ value: Duration) -> Reading {
        Reading(key: Key(label: label, dimensionPairs: []), kind: .floatingCounter, value: value.seconds)
    }

    static func gauge(_ label: String, _ value: Double, _ dimensions: (String, String)...) -> Reading {
        Reading(key: Key(label: label, dimensionPairs: dimensions.flatMap { [$0.0, $0.1] }), kind: .gauge, value: value)
    }
}

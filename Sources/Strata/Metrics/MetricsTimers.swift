import CoreMetrics

/// The durations swift-metrics records as they happen, on the writer thread: each
/// commit (by durability), checkpoint (by mode) and compaction step (by method). The
/// counters and gauges are reported by ``MetricsExporter``; a duration is worth its
/// distribution, which a periodic snapshot would lose.
///
/// Without a bootstrapped backend these are swift-metrics' no-op handlers.
struct MetricsTimers: @unchecked Sendable {
    // @unchecked Sendable: swift-metrics' Timer is a thread-safe reference to its handler.
    private let commitFull: Timer
    private let commitNormal: Timer
    private let checkpoint: [String: Timer]
    private let compaction: [String: Timer]

    init(factory: any MetricsFactory) {
        commitFull = Timer(label: "strata_commit_duration_seconds", dimensions: [("durability", "full")], factory: factory)
        commitNormal = Timer(label: "strata_commit_duration_seconds", dimensions: [("durability", "normal")], factory: factory)
        checkpoint = Dictionary(uniqueKeysWithValues: ["PASSIVE", "RESTART", "TRUNCATE"].map {
            ($0, Timer(label: "strata_checkpoint_duration_seconds", dimensions: [("mode", $0.lowercased())], factory: factory))
        })
        compaction = Dictionary(uniqueKeysWithValues: ["merge", "fold"].map {
            ($0, Timer(label: "strata_compaction_step_duration_seconds", dimensions: [("method", $0)], factory: factory))
        })
    }

    func commit(_ durability: Durability, took elapsed: Duration) {
        (durability == .full ? commitFull : commitNormal).recordNanoseconds(elapsed.nanoseconds)
    }

    func checkpoint(_ mode: String, took elapsed: Duration) {
        checkpoint[mode]?.recordNanoseconds(elapsed.nanoseconds)
    }

    func compactionStep(_ method: String, took elapsed: Duration) {
        compaction[method]?.recordNanoseconds(elapsed.nanoseconds)
    }
}

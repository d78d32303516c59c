import Foundation

/// What `strata-server bench` measured.
struct BenchReport {
    var devices: Int
    var documents: Int
    var pushers: Int
    var poolSize: Int
    /// The most PostgreSQL connections the instance held at once (sampled every 250 ms).
    var pgConnectionsMax: Int
    var devicesWaiting: Int
    var appliedP50: Double
    var appliedP99: Double
    var appliedCount: Int
    var pushedOperationsPerSecond: Double
    /// The instance's resident memory per idle connected device (a live pull waiting).
    var idleDeviceBytes: Int
    var serverRSSBaseline: Int
    var serverRSSIdle: Int
    /// The two-instance run, if there was one.
    var failover: BenchFailover.Outcome?

    var json: [String: Any] {
        var fields = base
        if let failover {
            fields["failover"] = [
                "devices": failover.devices, "acknowledged": failover.acknowledged, "stored": failover.stored, "lost": failover.lost,
                "deliveries_expected": failover.deliveriesExpected, "deliveries_missing": failover.deliveriesMissing,
                "deliveries_duplicated": failover.deliveriesDuplicated,
                "longest_switch_ms": failover.longestSwitchMilliseconds.rounded(),
            ] as [String: Any]
        }
        return fields
    }

    private var base: [String: Any] {
        ["devices": devices, "documents": documents, "pushers": pushers, "pool_size": poolSize,
         "pg_connections_max": pgConnectionsMax, "devices_waiting": devicesWaiting,
         "applied_p50_ms": (appliedP50 * 100).rounded() / 100, "applied_p99_ms": (appliedP99 * 100).rounded() / 100,
         "applied_count": appliedCount, "push_operations_per_second": pushedOperationsPerSecond.rounded(),
         "idle_device_bytes": idleDeviceBytes, "server_rss_baseline_bytes": serverRSSBaseline, "server_rss_idle_bytes": serverRSSIdle]
    }

    var table: String {
        """
        | devices | documents | PostgreSQL connections (max; pool \(poolSize)) | commit → applied p50 / p99 (\(pushers) pushing 1/s) | push, operations/s | memory per idle device |
        |---|---|---|---|---|---|
        | \(devices) (\(devicesWaiting) waiting) | \(documents) | \(pgConnectionsMax) | \(String(format: "%.1f / %.1f ms", appliedP50, appliedP99)) (\(appliedCount) deliveries) | \(Int(pushedOperationsPerSecond)) | \(idleDeviceBytes / 1024) KB (RSS \(serverRSSBaseline / 1_048_576) → \(serverRSSIdle / 1_048_576) MB) |
        """ + (failover.map { f in
            """


            | two instances, the first SIGKILLed half-way | acknowledged | stored | lost | deliveries missing / twice (of) | longest switch |
            |---|---|---|---|---|---|
            | \(f.devices) devices pushing every 100 ms | \(f.acknowledged) | \(f.stored) | \(f.lost) | \(f.deliveriesMissing) / \(f.deliveriesDuplicated) (\(f.deliveriesExpected)) | \(Int(f.longestSwitchMilliseconds)) ms |
            """
        } ?? "")
    }
}

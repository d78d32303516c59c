import Foundation
import Metrics
import Prometheus

/// The service's figures, served at `/metrics` in Prometheus' text format. Made on a
/// registry of the instance's own (not the process-wide swift-metrics bootstrap), so
/// two services in one process (tests) keep theirs apart.
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry
    let pushedOperations: Prometheus.Counter
    let duplicateOperations: Prometheus.Counter
    let pulledOperations: Prometheus.Counter
    let waitingPulls: Prometheus.Gauge
    let poolInUse: Prometheus.Gauge
    let poolSize: Prometheus.Gauge
    let feedConnected: Prometheus.Gauge
    let feedNotifications: Prometheus.Gauge

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        pushedOperations = registry.makeCounter(name: "strata_server_operations_stored_total")
        duplicateOperations = registry.makeCounter(name: "strata_server_operations_duplicate_total")
        pulledOperations = registry.makeCounter(name: "strata_server_operations_pulled_total")
        waitingPulls = registry.makeGauge(name: "strata_server_waiting_pulls")
        poolInUse = registry.makeGauge(name: "strata_server_db_connections_in_use")
        poolSize = registry.makeGauge(name: "strata_server_db_connections")
        feedConnected = registry.makeGauge(name: "strata_server_change_feed_connected")
        feedNotifications = registry.makeGauge(name: "strata_server_change_feed_notifications")
    }

    /// Counts one answered request by route and status.
    func answered(_ route: String, status: Int) {
        registry.makeCounter(name: "strata_server_requests_total", labels: [("route", route), ("status", String(status))]).increment()
    }

    /// Counts one refused token by reason.
    func refusedToken(_ reason: String) {
        registry.makeCounter(name: "strata_server_tokens_refused_total", labels: [("reason", reason)]).increment()
    }

    func page() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}

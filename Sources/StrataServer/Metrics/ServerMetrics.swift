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
        pushedOperations = registry.makeCounter(descriptor: Self.name("operations_stored", "total", "operations stored by pushes"))
        duplicateOperations = registry.makeCounter(descriptor: Self.name("operations_duplicate", "total", "pushed operations already stored"))
        pulledOperations = registry.makeCounter(descriptor: Self.name("operations_pulled", "total", "operations answered to pulls"))
        waitingPulls = registry.makeGauge(descriptor: Self.name("waiting_pulls", "", "live pulls waiting on this instance"))
        poolInUse = registry.makeGauge(descriptor: Self.name("db_connections_in_use", "", "pool connections lent to requests"))
        poolSize = registry.makeGauge(descriptor: Self.name("db_connections", "", "PostgreSQL connections: the pool and the feed"))
        feedConnected = registry.makeGauge(descriptor: Self.name("change_feed_connected", "", "1 while the change feed listens"))
        feedNotifications = registry.makeGauge(descriptor: Self.name("change_feed_notifications", "", "notifications the feed received"))
    }

    /// `strata_server_<metric>[_<unit>]`, with its help line.
    static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "strata", subsystem: "server", metricName: metric, unitName: unit, helpText: help)
    }

    /// Counts one answered request by route and status.
    func answered(_ route: String, status: Int) {
        registry.makeCounter(descriptor: Self.name("requests", "total", "requests answered, by route and status"),
                             labels: [("route", route), ("status", String(status))]).increment()
    }

    /// Counts one refused token by reason.
    func refusedToken(_ reason: String) {
        registry.makeCounter(descriptor: Self.name("tokens_refused", "total", "bearer tokens refused, by reason"),
                             labels: [("reason", reason)]).increment()
    }

    func page() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}

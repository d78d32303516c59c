import CoreMetrics
import Foundation

/// The engine's figures in swift-metrics (`Sources/Strata/Metrics/MetricsExporter.swift`).
extension Engine {
    /// Starts the exporter (at open, when `[metrics] export_interval_ms` is not 0).
    func startMetricsExport(factory: any MetricsFactory) {
        guard config.metrics.exportInterval > .zero else { return }
        let lane = jobs.lane
        let (recorder, buffer, vfs) = (recorder, buffer, vfsLease)
        let sources = MetricsExporter.Sources(
            metrics: { Engine.metrics(recorder: recorder, buffer: buffer, vfs: vfs) },
            jobs: {
                // A short bound: the exporter must never hold up a shutdown.
                try? lane.perform(.normal, timeout: .seconds(2)) { db in try JobRows.counts(db) }
            })
        let exporter = MetricsExporter(sources: sources, factory: factory, interval: config.metrics.exportInterval)
        metricsExporter = exporter
        exporter.start()
    }

    /// Stops the exporter after one last report, before the writer stops (its job
    /// counts are read through the writer).
    func stopMetricsExport() {
        metricsExporter?.stop()
    }

    /// Reports the figures once more after the writer has stopped: what the shutdown
    /// itself committed, and the clean shutdown.
    func reportFinalMetrics() {
        metricsExporter?.report(metrics)
    }

    /// One report of every figure now (tests; the exporter's thread does it on its own).
    func exportMetricsNow() {
        metricsExporter?.exportNow()
    }
}

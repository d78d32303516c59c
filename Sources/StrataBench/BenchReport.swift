import Foundation

/// Turns ``BenchResults`` into what people read: a console table, JSON, a Markdown
/// report with the targets checked, and an SVG chart (log scale).
package enum BenchReport {
    // MARK: Console

    package static func table(_ results: BenchResults) -> String {
        let header = ["tick Hz", "syncs/s", "bytes/s", "B/changed", "p99 ms", "crit@crash", "der@crash", "crit@power", "der@power"]
        var lines = [pad("strategy", 16, left: true) + header.map { pad($0, 11) }.joined()]
        for r in results.results {
            let cells = [String(format: "%.1f", r.tickRateHz), String(format: "%.2f", r.syncRequestsPerSec),
                         String(format: "%.0f", r.bytesWrittenPerSec), String(format: "%.2f", r.bytesPerChangedByte),
                         String(format: "%.3f", r.tickP99Ms),
                         String(format: "%.2f", risk(r, \.crash, "critical")), String(format: "%.2f", risk(r, \.crash, "derived")),
                         String(format: "%.2f", risk(r, \.powerLoss, "critical")), String(format: "%.2f", risk(r, \.powerLoss, "derived"))]
            lines.append(pad(r.name, 16, left: true) + cells.map { pad($0, 11) }.joined())
        }
        lines.append("(data at risk: mean seconds of changes lost at a random kill point; B/changed: bytes written per byte of changed component data)")
        return lines.joined(separator: "\n")
    }

    static func risk(_ r: StrategyResult, _ kind: KeyPath<RiskSummary, [String: RiskSummary.Stat]>, _ tier: String) -> Double {
        r.risk[keyPath: kind][tier]?.meanSecs ?? 0
    }

    // MARK: JSON

    package static func json(_ results: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(results), as: UTF8.self)
    }

    // MARK: Checks

    /// The specification's promises (docs/specification.md), checked against this run.
    package struct Check: Sendable {
        package var claim: String
        package var measured: String
        package var met: Bool?
    }

    package static func checks(_ results: BenchResults) -> [Check] {
        func find(_ name: String) -> StrategyResult? { results.results.first { $0.name == name } }
        var checks: [Check] = []
        if let strata = find("strata") {
            // One sync per critical flush, two per checkpoint (critical changes: 1 a second).
            let checkpointsPerSec = 2.0 / 30
            let bound = 1.0 + 2 * checkpointsPerSec + 0.3   // + the flushes of the run's edges
            checks.append(Check(claim: "Strata's sync requests per second stay at about one per critical flush (1/s) plus two per checkpoint",
                                measured: String(format: "%.2f/s", strata.syncRequestsPerSec), met: strata.syncRequestsPerSec <= bound))
            if let small = find("strata-scaling") {
                checks.append(Check(
                    claim: "…and do not grow with N or M",
                    measured: String(format: "%.2f/s at N=%d M=%d, %.2f/s at N=%d M=%d", small.syncRequestsPerSec, small.entities,
                                     small.moving, strata.syncRequestsPerSec, strata.entities, strata.moving),
                    met: strata.syncRequestsPerSec <= small.syncRequestsPerSec * 1.2 + 0.2))
            }
            if let naive = find("naive"), strata.syncRequestsPerSec > 0 {
                let ratio = naive.syncRequestsPerSec / strata.syncRequestsPerSec
                checks.append(Check(claim: "Strata spends ≥ 1000× fewer sync requests than the naive strategy (at N = M = 1000)",
                                    measured: String(format: "%.0f× (naive %.0f/s, at N=%d M=%d, reaching %.1f Hz)", ratio,
                                                     naive.syncRequestsPerSec, naive.entities, naive.moving, naive.tickRateHz),
                                    met: ratio >= 1000))
            }
            if let baseline = find("baseline"), baseline.tickP99Ms > 0 {
                checks.append(Check(claim: "Strata's tick p99 is within 10 % of the no-persistence baseline",
                                    measured: String(format: "%.3f ms vs %.3f ms (%+.0f %%)", strata.tickP99Ms, baseline.tickP99Ms,
                                                     (strata.tickP99Ms / baseline.tickP99Ms - 1) * 100),
                                    met: strata.tickP99Ms <= baseline.tickP99Ms * 1.1))
            }
        }
        if let high = find("strata-high") {
            for other in ["tick-full", "tick-normal"] {
                guard let o = find(other), high.bytesWrittenPerSec > 0 else { continue }
                let ratio = o.bytesWrittenPerSec / high.bytesWrittenPerSec
                checks.append(Check(claim: "With a 10 s derived interval, Strata writes ≥ 100× fewer bytes per second than \(other)",
                                    measured: String(format: "%.0f×", ratio), met: ratio >= 100))
            }
        }
        return checks
    }

    // MARK: Markdown

    package static func markdown(_ results: BenchResults, chartFile: String) -> String {
        let o = results.options
        var md = """
            # Strata fsync benchmark

            The same workload persisted by each strategy, side by side in one run: \(o.entities) entities, \(o.moving) of them \
            moving every tick at \(o.hz) Hz, one critical change (a label edit) per second, for \(o.seconds) simulated seconds \
            each, paced in real time; a Strata tier whose derived interval is at most \(Int(o.coverIntervalsUpToSecs)) s runs \
            2.5 intervals so that derived flushes are part of its numbers (the 30 s and 60 s tiers run \(o.seconds) s: no \
            derived flush happens, and their derived data at risk simply grows with the run). Rates are per *simulated* \
            second. Sync requests and bytes are what SQLite asked of the disk, counted by Strata's VFS (the snapshot \
            strategy counts its own `fsync`s and bytes). The baseline and Strata (default config) tick together in one \
            loop, which goes first drawn each tick, so that their tick times compare on the same machine at the same \
            moments; every other strategy runs on its own, one after another.

            - Command: `\(results.command)`
            - Machine: \(results.machine)
            - Date: \(results.date)

            ![sync requests and bytes written per simulated second, log scale](\(chartFile))

            ## Results

            | strategy | simulated s | tick rate | sync requests / s | bytes / s | bytes per changed byte | rows | tick p50 / p99 / max (ms) | tick CPU / background CPU (ms) |
            |---|---|---|---|---|---|---|---|---|

            """
        for r in results.results {
            let rate = r.heldTickRate ? String(format: "%.1f Hz", r.tickRateHz)
                : String(format: "**%.1f Hz** (could not hold %d Hz: %d ticks)", r.tickRateHz, o.hz, r.ticks)
            md += "| `\(r.name)`\(r.entities != o.entities ? " (N=\(r.entities), M=\(r.moving))" : "") | "
                + String(format: "%.1f", r.simulatedSeconds) + " | \(rate) | "
                + String(format: "%.2f | %@ | %.2f | %d | %.3f / %.3f / %.3f | %.0f / %.0f |\n",
                         r.syncRequestsPerSec, human(r.bytesWrittenPerSec) as NSString, r.bytesPerChangedByte, r.rowsWritten,
                         r.tickP50Ms, r.tickP99Ms, r.tickMaxMs, r.tickCpuMs, r.backgroundCpuMs)
        }
        md += """

            ## Data at risk

            The age of the oldest change a fault would lose, per tier, at kill points spread over the run (mean / p99 / max, \
            seconds). A crash (SIGKILL) loses what was not yet committed; a power loss also what was committed but not yet \
            synced to the disk.

            | strategy | critical, crash | derived, crash | critical, power loss | derived, power loss |
            |---|---|---|---|---|

            """
        for r in results.results {
            func cell(_ kind: KeyPath<RiskSummary, [String: RiskSummary.Stat]>, _ tier: String) -> String {
                guard let s = r.risk[keyPath: kind][tier] else { return "–" }
                return String(format: "%.2f / %.2f / %.2f", s.meanSecs, s.p99Secs, s.maxSecs)
            }
            md += "| `\(r.name)` | \(cell(\.crash, "critical")) | \(cell(\.crash, "derived")) | \(cell(\.powerLoss, "critical")) | \(cell(\.powerLoss, "derived")) |\n"
        }
        md += "\n## What it must show\n\n| claim | measured | |\n|---|---|---|\n"
        for check in checks(results) {
            md += "| \(check.claim) | \(check.measured) | \(check.met.map { $0 ? "met" : "**not met**" } ?? "") |\n"
        }
        md += "\n## The strategies\n\n"
        for r in results.results { md += "- `\(r.name)`: \(r.summary)\n" }
        md += """

            Sync requests per file kind (main database / WAL / rollback journal / snapshot file):

            """
        for r in results.results {
            let kinds = ["main_db", "wal", "journal", "file"].compactMap { k in r.syncsByKind[k].map { "\(k) \($0)" } }
            md += "- `\(r.name)`: \(r.syncRequests) in all\(kinds.isEmpty ? "" : " (\(kinds.joined(separator: ", ")))")\n"
        }
        return md
    }

    static func human(_ bytesPerSec: Double) -> String {
        switch bytesPerSec {
        case ..<1024: String(format: "%.0f B", bytesPerSec)
        case ..<1_048_576: String(format: "%.1f KiB", bytesPerSec / 1024)
        default: String(format: "%.2f MiB", bytesPerSec / 1_048_576)
        }
    }

    // MARK: SVG

    /// Two panels of horizontal bars on log scales: sync requests per second, bytes per second.
    package static func svg(_ results: BenchResults) -> String {
        let rows = results.results
        let rowHeight = 24.0, labelWidth = 150.0, barWidth = 300.0, panelGap = 60.0, top = 50.0
        let width = labelWidth + 2 * barWidth + panelGap + 40
        let height = top + Double(rows.count) * rowHeight + 40
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>

            """
        let panels: [(String, (StrategyResult) -> Double, String, (Double) -> String)] = [
            ("sync requests / simulated s", { $0.syncRequestsPerSec }, "#c0392b", { String(format: $0 >= 100 ? "%.0f" : "%.2f", $0) }),
            ("bytes written / simulated s", { $0.bytesWrittenPerSec }, "#2c6fbb", human),
        ]
        for (p, panel) in panels.enumerated() {
            let x0 = labelWidth + Double(p) * (barWidth + panelGap)
            let values = rows.map(panel.1)
            let maxValue = max(values.max() ?? 1, 1)
            let decades = max(1, Int(ceil(log10(maxValue))) + 1)   // from 0.1 up
            func x(_ v: Double) -> Double { v <= 0.1 ? 0 : min(1, (log10(v) + 1) / Double(decades)) * barWidth }
            svg += "<text x=\"\(x0)\" y=\"20\" font-weight=\"bold\">\(panel.0) (log scale)</text>\n"
            for d in 0 ... decades {
                let gx = x0 + Double(d) / Double(decades) * barWidth
                let label = d == 0 ? "0.1" : d == 1 ? "1" : "1e\(d - 1)"
                svg += "<line x1=\"\(gx)\" y1=\"\(top - 10)\" x2=\"\(gx)\" y2=\"\(height - 30)\" stroke=\"#ddd\"/>"
                svg += "<text x=\"\(gx)\" y=\"\(height - 15)\" text-anchor=\"middle\" fill=\"#666\" font-size=\"10\">\(label)</text>\n"
            }
            for (i, r) in rows.enumerated() {
                let y = top + Double(i) * rowHeight
                let v = panel.1(r)
                svg += "<rect x=\"\(x0)\" y=\"\(y)\" width=\"\(String(format: "%.1f", x(v)))\" height=\"\(rowHeight - 6)\" fill=\"\(r.name.hasPrefix("strata") ? panel.2 : "#999")\"/>"
                svg += "<text x=\"\(x0 + x(v) + 4)\" y=\"\(y + rowHeight - 10)\" font-size=\"10\">\(panel.3(v))</text>\n"
            }
        }
        for (i, r) in rows.enumerated() {
            let y = top + Double(i) * rowHeight + rowHeight - 10
            svg += "<text x=\"\(labelWidth - 8)\" y=\"\(y)\" text-anchor=\"end\">\(r.name)</text>\n"
        }
        return svg + "</svg>\n"
    }

    /// Writes `NAME.json`, `NAME.svg` and `NAME.md` into `folder`; returns their paths.
    @discardableResult
    package static func write(_ results: BenchResults, to folder: URL, name: String) throws -> [String] {
        try writeFiles(json: json(results), svg: svg(results), markdown: { markdown(results, chartFile: $0) }, to: folder, name: name)
    }

    /// The files of a report, `NAME.json`, `NAME.svg` (if there is a chart) and `NAME.md`, in
    /// that order; `markdown` is given the chart's file name.
    static func writeFiles(json: String, svg: String?, markdown: (String) -> String, to folder: URL, name: String) throws -> [String] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = { (ext: String) in folder.appendingPathComponent("\(name).\(ext)") }
        var files = [file("json")]
        try json.write(to: files[0], atomically: true, encoding: .utf8)
        if let svg {
            files.append(file("svg"))
            try svg.write(to: file("svg"), atomically: true, encoding: .utf8)
        }
        files.append(file("md"))
        try markdown(file("svg").lastPathComponent).write(to: file("md"), atomically: true, encoding: .utf8)
        return files.map(\.path)
    }

    /// The checks, one line each, as `strata bench` prints them.
    package static func checkLines(_ checks: [Check]) -> [String] {
        checks.map { "\($0.met == true ? "met    " : "NOT MET") \($0.claim): \($0.measured)" }
    }
}

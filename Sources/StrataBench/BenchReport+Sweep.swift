import Foundation

/// The report of a sweep over world sizes: a table per size, the targets checked, and a
/// log-log chart of bytes/s and tick p99 against N, a line per strategy.
extension BenchReport {
    // MARK: Console

    package static func sweepTable(_ sweep: SweepResults) -> String {
        var lines: [String] = []
        let header = ["bytes/s", "B/row", "B/payload", "syncs/s", "p50 ms", "p99 ms", "p99w ms", "max ms", "CPU ms/s", "reload ms", "compact"]
        for point in sweep.points {
            lines.append("N=\(point.entities) M=\(point.moving)")
            lines.append("  " + pad("strategy", 14, left: true) + header.map { pad($0, 10) }.joined())
            for r in point.results {
                let cells = [human(r.bytesWrittenPerSec), String(format: "%.0f", r.bytesPerPersistedRow),
                             String(format: "%.2f", r.bytesPerPayloadByte), String(format: "%.2f", r.syncRequestsPerSec),
                             String(format: "%.3f", r.tickP50Ms), String(format: "%.3f", r.tickP99Ms),
                             String(format: "%.3f", r.tickP99WindowMedianMs), String(format: "%.2f", r.tickMaxMs),
                             String(format: "%.1f", r.backgroundCpuMsPerSec), r.reloadMs.map { String(format: "%.0f", $0) } ?? "-",
                             r.compactionRounds.map { "\($0)/\(r.compactionSteps ?? 0)" } ?? "-"]
                lines.append("  " + pad(r.name, 14, left: true) + cells.map { pad($0, 10) }.joined())
            }
        }
        lines.append("(B/row, B/payload: bytes written per row and per payload byte persisted; p99w: median of the 10 s windows' p99s; compact: compaction rounds/steps in the run)")
        return lines.joined(separator: "\n")
    }

    static func pad(_ s: String, _ n: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, n - s.count))
        return left ? s + fill : fill + s
    }

    // MARK: Targets

    /// The targets of the storage issue (docs/storage.md), checked against the sweep.
    package static func sweepChecks(_ sweep: SweepResults) -> [Check] {
        var checks: [Check] = []
        func result(_ name: String, at n: Int) -> StrategyResult? {
            sweep.points.first { $0.entities == n }?.results.first { $0.name == name }
        }
        let sizes = sweep.points.map(\.entities)
        for n in sizes where n >= 100_000 {
            guard let strata = result("strata", at: n) else { continue }
            checks.append(Check(claim: "Strata writes ≤ 5 bytes per payload byte persisted at N = \(n) (compaction included)",
                                measured: String(format: "%.2f (%@/s for %@/s of payload)", strata.bytesPerPayloadByte,
                                                 human(strata.bytesWrittenPerSec) as NSString,
                                                 human(Double(strata.persistedPayloadBytes) / max(strata.simulatedSeconds, 0.001)) as NSString),
                                met: strata.bytesPerPayloadByte <= 5))
        }
        let targets: [(Int, Double)] = [(10_000, 5), (100_000, 50), (1_000_000, 500)]
        for (n, factor) in targets {
            guard let strata = result("strata", at: n), let snapshot = result("snapshot-1s", at: n), strata.bytesWrittenPerSec > 0 else { continue }
            let ratio = snapshot.bytesWrittenPerSec / strata.bytesWrittenPerSec
            checks.append(Check(claim: "At N = \(n), Strata writes ≥ \(Int(factor))× fewer bytes/s than a snapshot every second",
                                measured: String(format: "%.1f× (%@/s vs %@/s)", ratio, human(strata.bytesWrittenPerSec) as NSString,
                                                 human(snapshot.bytesWrittenPerSec) as NSString),
                                met: ratio >= factor))
        }
        if let point = sweep.points.first(where: { $0.entities == $0.moving }),
           let strata = point.results.first(where: { $0.name == "strata" }),
           let snapshot = point.results.first(where: { $0.name == "snapshot-1s" }), snapshot.bytesWrittenPerSec > 0 {
            let ratio = strata.bytesWrittenPerSec / snapshot.bytesWrittenPerSec
            checks.append(Check(claim: "At N = M = \(point.entities), where everything moves, Strata is within 1.5× of a snapshot every second",
                                measured: String(format: "%.2f× (%@/s vs %@/s)", ratio, human(strata.bytesWrittenPerSec) as NSString,
                                                 human(snapshot.bytesWrittenPerSec) as NSString),
                                met: ratio <= 1.5))
        }
        for n in sizes where n >= 10_000 {
            guard let strata = result("strata", at: n), let snapshot = result("snapshot-5s", at: n) else { continue }
            checks.append(Check(claim: "At N = \(n), Strata writes fewer bytes/s than a snapshot every 5 s",
                                measured: String(format: "%@/s vs %@/s", human(strata.bytesWrittenPerSec) as NSString,
                                                 human(snapshot.bytesWrittenPerSec) as NSString),
                                met: strata.bytesWrittenPerSec < snapshot.bytesWrittenPerSec))
        }
        let strataRuns = sweep.points.compactMap { point in point.results.first { $0.name == "strata" } }
        if let most = strataRuns.map(\.syncRequestsPerSec).max(), let least = strataRuns.map(\.syncRequestsPerSec).min() {
            // One per critical flush (1/s), two per checkpoint (every 30 s), and the run's edges.
            checks.append(Check(claim: "Strata's sync requests/s stay at about one per critical flush plus two per checkpoint, flat in N",
                                measured: String(format: "%.2f–%.2f/s over N = %@", least, most,
                                                 strataRuns.map { "\($0.entities)" }.joined(separator: ", ") as NSString),
                                met: most <= 1.0 + 2.0 / 30 + 0.3 && most - least <= 0.2))
        }
        for n in sizes where n <= 100_000 {
            guard let strata = result("strata", at: n), let baseline = result("baseline", at: n), baseline.tickP99Ms > 0 else { continue }
            // Judged on the median of the 10 s windows' p99s: on this shared VM a burst of
            // interference moves a whole run's p99 far (at N = 100k the same build measured
            // +8 % in one sweep, +60 % in the next, 0.73–1.05× in three 30 s runs); the whole
            // run's p99 is shown beside it.
            let (s, b) = (strata.tickP99WindowMedianMs, baseline.tickP99WindowMedianMs)
            checks.append(Check(claim: "At N = \(n), Strata's tick p99 is within 10 % of the baseline's (median of 10 s windows)",
                                measured: String(format: "%.3f ms vs %.3f ms (%+.0f %%); whole run %.3f vs %.3f ms (%+.0f %%)",
                                                 s, b, (s / b - 1) * 100, strata.tickP99Ms, baseline.tickP99Ms,
                                                 (strata.tickP99Ms / baseline.tickP99Ms - 1) * 100),
                                met: s <= b * 1.1))
        }
        if let small = result("strata", at: sizes.min() ?? 0), let large = strataRuns.filter({ $0.entities <= 100_000 }).last,
           large.entities > small.entities, small.backgroundCpuMsPerSec > 0 {
            let ratio = large.backgroundCpuMsPerSec / small.backgroundCpuMsPerSec
            checks.append(Check(claim: "Strata's writer CPU per simulated second is flat in N (within 2× from \(small.entities) to \(large.entities))",
                                measured: String(format: "%.1f → %.1f ms/s (%.2f×)", small.backgroundCpuMsPerSec,
                                                 large.backgroundCpuMsPerSec, ratio),
                                met: ratio <= 2))
        }
        if let largest = strataRuns.last, let file = largest.fileBytes, file > 0, largest.entities >= 100_000 {
            let ratio = Double(largest.setupBytes) / Double(file)
            checks.append(Check(claim: "The first save of \(largest.entities) entities writes ≤ 1.5× the file it produces",
                                measured: String(format: "%.2f× (%@ written for a file of %@)", ratio, human(Double(largest.setupBytes)) as NSString,
                                                 human(Double(file)) as NSString),
                                met: ratio <= 1.5))
        }
        if let compactions = strataRuns.map({ $0.compactionRounds ?? 0 }).min() {
            // Once: moves coded in a few bytes each (segment format 3) fill the log about three
            // times slower than before, and a 60-s run at the sweep's 64 KB compacts once.
            checks.append(Check(claim: "Compaction happens in every Strata run, so its cost is in the figures",
                                measured: "\(compactions) rounds at least", met: compactions >= 1))
        }
        return checks
    }

    // MARK: Markdown

    package static func sweepMarkdown(_ sweep: SweepResults, chartFile: String) -> String {
        let o = sweep.options
        var md = """
            # Strata across world sizes

            N entities, \(o.moving) of them (or all, when N is smaller) moving every tick at \(o.hz) Hz, spread over the \
            world (every N/M-th entity); one critical change (a label edit) per second; \(o.seconds) simulated seconds per \
            strategy and size, paced in real time. The baseline (no persistence) and Strata run together in one tick \
            loop, each tick applied to both (which goes first drawn each tick) and timed apart, so that their tick times \
            compare on the same machine at the same moments; the snapshots run on their own. The setup (spawning the world and \
            saving it the first time) is measured on its own and is not in the rates. Bytes and sync requests are what SQLite asked of the disk (WAL \
            and main file, through Strata's counting VFS), or what the snapshot strategy wrote itself.

            - Command: `\(sweep.command)`
            - Machine: \(sweep.machine)
            - Date: \(sweep.date)

            ![bytes per second and tick p99 against N, log-log](\(chartFile))

            """
        for point in sweep.points {
            md += """

                ## N = \(point.entities), M = \(point.moving)

                | strategy | bytes / s | bytes per row | bytes per payload byte | sync requests / s | tick p50 / p99 / p99 median of 10 s windows / max (ms) | writer CPU (ms / s) | reload (ms) | compactions (rounds / steps) | setup (s, bytes written, file) | data at risk, crash: critical / derived (s) | power loss: critical / derived (s) |
                |---|---|---|---|---|---|---|---|---|---|---|---|

                """
            for r in point.results {
                let rate = r.heldTickRate ? "" : String(format: " (**%.1f Hz**)", r.tickRateHz)
                md += "| `\(r.name)`\(rate) | \(human(r.bytesWrittenPerSec)) | "
                    + String(format: "%.0f | %.2f | %.2f | %.3f / %.3f / %.3f / %.2f | %.1f | ", r.bytesPerPersistedRow, r.bytesPerPayloadByte,
                             r.syncRequestsPerSec, r.tickP50Ms, r.tickP99Ms, r.tickP99WindowMedianMs, r.tickMaxMs,
                             r.backgroundCpuMsPerSec)
                    + (r.reloadMs.map { String(format: "%.0f", $0) } ?? "–") + " | "
                    + (r.compactionRounds.map { "\($0) / \(r.compactionSteps ?? 0)" } ?? "–") + " | "
                    + String(format: "%.1f, %@", r.setupSeconds, human(Double(r.setupBytes)) as NSString)
                    + (r.fileBytes.map { ", " + human(Double($0)) } ?? "")
                    + " | \(meanRisk(r, \.crash)) | \(meanRisk(r, \.powerLoss)) |\n"
            }
        }
        md += "\n## What it must show\n\n| claim | measured | |\n|---|---|---|\n"
        for check in sweepChecks(sweep) {
            md += "| \(check.claim) | \(check.measured) | \(check.met.map { $0 ? "met" : "**not met**" } ?? "") |\n"
        }
        md += "\n## The strategies\n\n"
        for r in sweep.points.last?.results ?? [] { md += "- `\(r.name)`: \(r.summary)\n" }
        return md
    }

    /// "critical / derived": the mean data at risk of each tier (seconds), – for a tier without changes.
    static func meanRisk(_ r: StrategyResult, _ kind: KeyPath<RiskSummary, [String: RiskSummary.Stat]>) -> String {
        let critical = r.risk[keyPath: kind]["critical"].map { String(format: "%.2f", $0.meanSecs) } ?? "–"
        let derived = r.risk[keyPath: kind]["derived"].map { String(format: "%.2f", $0.meanSecs) } ?? "–"
        return "\(critical) / \(derived)"
    }

    // MARK: SVG

    /// Two log-log panels: bytes written per second, and tick p99, against N; a line per strategy.
    package static func sweepSVG(_ sweep: SweepResults) -> String {
        let names = sweep.points.first?.results.map(\.name) ?? []
        let colors = ["#999999", "#e67e22", "#8e44ad", "#2c6fbb", "#c0392b", "#27ae60"]
        let panelWidth = 360.0, panelHeight = 260.0, left = 70.0, top = 40.0, gap = 90.0
        let width = left + 2 * panelWidth + gap + 160, height = top + panelHeight + 60
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>

            """
        let ns = sweep.points.map { Double($0.entities) }
        guard let nMin = ns.min(), let nMax = ns.max() else { return svg + "</svg>\n" }
        let xLow = floor(log10(nMin)), xHigh = max(ceil(log10(nMax)), xLow + 1)
        let panels: [(String, (StrategyResult) -> Double, (Double) -> String)] = [
            ("bytes written / simulated s", { $0.bytesWrittenPerSec }, decimalBytes),
            ("tick p99 (ms)", { $0.tickP99Ms }, { String(format: $0 < 1 ? "%.3f" : "%.1f", $0) }),
        ]
        for (p, panel) in panels.enumerated() {
            let x0 = left + Double(p) * (panelWidth + gap)
            let values = sweep.points.flatMap { $0.results.map(panel.1) }.filter { $0 > 0 }
            let yLow = floor(log10(values.min() ?? 1)), yHigh = max(ceil(log10(values.max() ?? 10)), yLow + 1)
            func x(_ n: Double) -> Double { x0 + (log10(n) - xLow) / (xHigh - xLow) * panelWidth }
            func y(_ v: Double) -> Double { top + panelHeight - (log10(max(v, 1e-9)) - yLow) / (yHigh - yLow) * panelHeight }
            svg += "<text x=\"\(x0)\" y=\"20\" font-weight=\"bold\">\(panel.0) against N (log-log)</text>\n"
            for d in Int(xLow) ... Int(xHigh) {
                let gx = x(pow(10, Double(d)))
                svg += "<line x1=\"\(gx)\" y1=\"\(top)\" x2=\"\(gx)\" y2=\"\(top + panelHeight)\" stroke=\"#ddd\"/>"
                svg += "<text x=\"\(gx)\" y=\"\(top + panelHeight + 16)\" text-anchor=\"middle\" fill=\"#666\" font-size=\"10\">1e\(d)</text>\n"
            }
            for d in Int(yLow) ... Int(yHigh) {
                let gy = y(pow(10, Double(d)))
                svg += "<line x1=\"\(x0)\" y1=\"\(gy)\" x2=\"\(x0 + panelWidth)\" y2=\"\(gy)\" stroke=\"#ddd\"/>"
                svg += "<text x=\"\(x0 - 6)\" y=\"\(gy + 4)\" text-anchor=\"end\" fill=\"#666\" font-size=\"10\">\(panel.2(pow(10, Double(d))))</text>\n"
            }
            svg += "<text x=\"\(x0 + panelWidth / 2)\" y=\"\(top + panelHeight + 34)\" text-anchor=\"middle\">N (entities)</text>\n"
            for (i, name) in names.enumerated() {
                let points = sweep.points.compactMap { point -> (Double, Double)? in
                    guard let r = point.results.first(where: { $0.name == name }), panel.1(r) > 0 else { return nil }
                    return (x(Double(point.entities)), y(panel.1(r)))
                }
                guard !points.isEmpty else { continue }
                let color = colors[i % colors.count]
                let path = points.map { String(format: "%.1f,%.1f", $0.0, $0.1) }.joined(separator: " ")
                svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"/>"
                for (px, py) in points { svg += String(format: "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%@\"/>", px, py, color as NSString) }
                svg += "\n"
            }
        }
        for (i, name) in names.enumerated() {
            let ly = top + Double(i) * 20
            let lx = left + 2 * panelWidth + gap + 20
            svg += "<line x1=\"\(lx)\" y1=\"\(ly)\" x2=\"\(lx + 20)\" y2=\"\(ly)\" stroke=\"\(colors[i % colors.count])\" stroke-width=\"3\"/>"
            svg += "<text x=\"\(lx + 26)\" y=\"\(ly + 4)\">\(name)</text>\n"
        }
        return svg + "</svg>\n"
    }

    /// A power of ten of bytes in decimal units, for the chart's axis (1 kB, 10 kB, …).
    static func decimalBytes(_ value: Double) -> String {
        let units = ["B", "kB", "MB", "GB"]
        var v = value, unit = 0
        while v >= 1000 && unit < units.count - 1 { v /= 1000; unit += 1 }
        return String(format: "%.0f %@", v, units[unit] as NSString)
    }

    /// Writes `NAME.json`, `NAME.svg` and `NAME.md` into `folder`; returns their paths.
    @discardableResult
    package static func write(_ sweep: SweepResults, to folder: URL, name: String) throws -> [String] {
        try writeFiles(json: json(sweep), svg: sweepSVG(sweep), markdown: { sweepMarkdown(sweep, chartFile: $0) }, to: folder, name: name)
    }
}

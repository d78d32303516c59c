import Foundation

/// The report of the canvas sweep (`strata bench --workload canvas`): the sweep's tables,
/// pages per commit by B-tree, and the canvas's own targets.
extension BenchReport {
    // MARK: Console

    package static func canvasTable(_ sweep: SweepResults) -> String {
        var lines = [sweepTable(sweep)]
        for point in sweep.points {
            for r in point.results {
                guard let pages = r.pagesPerCommit, let trees = r.pagesByTree else { continue }
                lines.append(String(format: "%@ at %d shapes: %.1f pages per commit (%d commits, %.1f operations/s, WAL peak %@): ",
                                    r.name as NSString, r.entities, pages, r.commits ?? 0, r.operationsPerSec ?? 0,
                                    human(Double(r.walPeakBytes ?? 0)) as NSString)
                    + topTrees(trees).joined(separator: ", "))
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The trees with the most pages per commit, "name 1.2" each.
    static func topTrees(_ trees: [String: Double], count: Int = 8) -> [String] {
        trees.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(count)
            .map { String(format: "%@ %.1f", $0.key as NSString, $0.value) }
    }

    // MARK: Targets

    /// The canvas's targets: one sync request per critical delay (plus two per checkpoint)
    /// whatever the operation rate, bytes per payload byte, below the snapshots, a WAL inside
    /// its limit and no alert.
    package static func canvasChecks(_ sweep: SweepResults) -> [Check] {
        var checks: [Check] = []
        func result(_ name: String, at n: Int) -> StrategyResult? {
            sweep.points.first { $0.entities == n }?.results.first { $0.name == name }
        }
        let sizes = sweep.points.map(\.entities)
        for point in sweep.points {
            for r in point.results where r.name.hasPrefix("strata") {
                let checkpoints = Double(r.checkpoints ?? 0)
                let bound = 1.3 * r.simulatedSeconds + 2 * checkpoints
                checks.append(Check(
                    claim: "\(r.name) at \(point.entities) shapes: sync requests ≤ 1.3 a second plus 2 per checkpoint",
                    measured: String(format: "%d in %.0f s (%.2f/s) with %d checkpoints, at %.0f operations/s; bound %.0f",
                                     r.syncRequests, r.simulatedSeconds, r.syncRequestsPerSec, r.checkpoints ?? 0,
                                     r.operationsPerSec ?? 0, bound),
                    met: Double(r.syncRequests) <= bound))
            }
        }
        if let n = sizes.min(), let strata = result("strata", at: n) {
            if let snapshot = result("snapshot-1s", at: n) {
                checks.append(Check(claim: "At \(n) shapes, Strata writes fewer bytes/s than a snapshot of the canvas every second",
                                    measured: String(format: "%@/s vs %@/s", human(strata.bytesWrittenPerSec) as NSString,
                                                     human(snapshot.bytesWrittenPerSec) as NSString),
                                    met: strata.bytesWrittenPerSec < snapshot.bytesWrittenPerSec))
            }
        }
        for n in sizes {
            guard let strata = result("strata", at: n), let perHostByte = strata.bytesPerHostByte else { continue }
            checks.append(Check(claim: "At \(n) shapes, Strata writes ≤ 8 bytes per byte of the host's data (its components and the operations logged on its device)",
                                measured: String(format: "%.2f (%@/s for %@/s of the host's data; %.2f per payload byte counting the engine's stamps and the peer's operations)",
                                                 perHostByte, human(strata.bytesWrittenPerSec) as NSString,
                                                 human(Double(strata.hostPayloadBytes ?? 0) / max(strata.simulatedSeconds, 0.001)) as NSString,
                                                 strata.bytesPerPayloadByte),
                                met: perHostByte <= 8))
        }
        for n in sizes where n >= 10_000 {
            guard let strata = result("strata", at: n), let snapshot = result("snapshot-5s", at: n) else { continue }
            checks.append(Check(claim: "At \(n) shapes, Strata writes fewer bytes/s than a snapshot of the canvas every 5 s",
                                measured: String(format: "%@/s vs %@/s (%.1f× fewer)", human(strata.bytesWrittenPerSec) as NSString,
                                                 human(snapshot.bytesWrittenPerSec) as NSString,
                                                 snapshot.bytesWrittenPerSec / max(strata.bytesWrittenPerSec, 1)),
                                met: strata.bytesWrittenPerSec < snapshot.bytesWrittenPerSec))
        }
        for point in sweep.points {
            for r in point.results where r.name.hasPrefix("strata") {
                let alerts = r.alerts ?? []
                checks.append(Check(claim: "\(r.name) at \(point.entities) shapes: the WAL stays inside its limit and no alert is raised",
                                    measured: "WAL peak \(human(Double(r.walPeakBytes ?? 0)))"
                                        + (alerts.isEmpty ? ", no alert" : "; " + alerts.joined(separator: "; ")),
                                    met: alerts.isEmpty))
            }
        }
        return checks
    }

    // MARK: Markdown

    package static func canvasMarkdown(_ sweep: SweepResults, chartFile: String) -> String {
        let o = sweep.options
        var md = """
            # Strata on the canvas

            The canvas `strata sim` draws, as a benchmark: shapes created and deleted (2 a second), dragged (derived \
            transforms, every tick of a drag), strokes drawn (points derived, the pen critical, the end a flush event, a \
            thumbnail job and file for each), document metadata edited, every edit an operation in the log, and a second \
            device's operations arriving; \(o.seconds) simulated seconds at \(o.hz) Hz per size, paced in real time, on \
            the default configuration. The setup (growing the canvas to its shapes and saving it the first time) is measured \
            on its own and is not in the rates. Strata ticks the canvas; the snapshots watch the same world in the same loop \
            and save its components whole (not the operation log nor the jobs, which Strata's figures include). Bytes and \
            sync requests are what SQLite asked of the disk (WAL and main file, through Strata's counting VFS), or what a \
            snapshot wrote itself; the thumbnails' files are in neither. Payload: the encoded components and operations \
            Strata wrote. The host's data, the headline's divisor: its components' values and the operations logged on its \
            device (with those the engine derived from its synced components, each carrying a value the host set); not the \
            engine's stamps nor the operations the second device sent, which each size lists below the table. A snapshot's \
            payload is the components alone.

            - Command: `\(sweep.command)`
            - Machine: \(sweep.machine)
            - Date: \(sweep.date)

            ![bytes per second and tick p99 against the canvas's shapes, log-log](\(chartFile))

            """
        for point in sweep.points {
            md += """

                ## \(point.entities) shapes

                | strategy | bytes / s | bytes per row | bytes per byte of the host's data (per payload byte) | sync requests / s | tick p50 / p99 / p99 median of 10 s windows / max (ms) | writer CPU (ms / s) | reload (ms) | setup (s, bytes written, file) | data at risk, crash: critical / derived (s) | power loss: critical / derived (s) |
                |---|---|---|---|---|---|---|---|---|---|---|

                """
            for r in point.results {
                let rate = r.heldTickRate ? "" : String(format: " (**%.1f Hz**)", r.tickRateHz)
                md += "| `\(r.name)`\(rate) | \(human(r.bytesWrittenPerSec)) | "
                    + String(format: "%.0f | %@ | %.2f | %.3f / %.3f / %.3f / %.2f | %.1f | ", r.bytesPerPersistedRow,
                             (r.bytesPerHostByte.map { String(format: "%.2f (%.2f)", $0, r.bytesPerPayloadByte) }
                                ?? String(format: "%.2f", r.bytesPerPayloadByte)) as NSString,
                             r.syncRequestsPerSec, r.tickP50Ms, r.tickP99Ms, r.tickP99WindowMedianMs, r.tickMaxMs, r.backgroundCpuMsPerSec)
                    + (r.reloadMs.map { String(format: "%.0f", $0) } ?? "–") + " | "
                    + (r.fileBytes.map { String(format: "%.1f, %@, %@", r.setupSeconds, human(Double(r.setupBytes)) as NSString,
                                                human(Double($0)) as NSString) } ?? "–")
                    + " | \(meanRisk(r, \.crash)) | \(meanRisk(r, \.powerLoss)) |\n"
            }
            let strata = point.results.filter { $0.pagesPerCommit != nil }
            let shared = strata.filter { $0.hostPayloadBytes != nil }
            if !shared.isEmpty {
                md += "\nThe payload per simulated second (the host's data, then what is not the host's beside it):\n\n"
                for r in shared {
                    func rate(_ bytes: Int?) -> String { human(Double(bytes ?? 0) / max(r.simulatedSeconds, 0.001)) }
                    md += "- `\(r.name)`: the host's data \(rate(r.hostPayloadBytes))/s (of it, operations derived from synced components "
                        + "\(rate(r.derivedOperationPayloadBytes))/s); the engine's stamps \(rate(r.stampPayloadBytes))/s; "
                        + "operations received \(rate(r.receivedOperationPayloadBytes))/s\n"
                }
            }
            if !strata.isEmpty {
                md += "\nPages per commit by B-tree (`PageWrites`: the WAL frames each table or index was written in, per transaction):\n\n"
                for r in strata {
                    md += String(format: "- `%@`: %.1f per commit (%d commits, %.1f operations/s, %d checkpoints, WAL peak %@): ",
                                 r.name as NSString, r.pagesPerCommit ?? 0, r.commits ?? 0, r.operationsPerSec ?? 0, r.checkpoints ?? 0,
                                 human(Double(r.walPeakBytes ?? 0)) as NSString)
                        + topTrees(r.pagesByTree ?? [:], count: 12).joined(separator: ", ") + "\n"
                }
            }
        }
        md += "\n## What it must show\n\n| claim | measured | |\n|---|---|---|\n"
        for check in canvasChecks(sweep) {
            md += "| \(check.claim) | \(check.measured) | \(check.met.map { $0 ? "met" : "**not met**" } ?? "") |\n"
        }
        md += "\n## The strategies\n\n"
        var seen = Set<String>()
        for point in sweep.points {
            for r in point.results where seen.insert(r.name).inserted { md += "- `\(r.name)`: \(r.summary)\n" }
        }
        return md
    }

    /// Writes the canvas sweep's `NAME.json`, `NAME.svg` and `NAME.md` into `folder`.
    @discardableResult
    package static func writeCanvas(_ sweep: SweepResults, to folder: URL, name: String) throws -> [String] {
        try writeFiles(json: json(sweep), svg: sweepSVG(sweep), markdown: { canvasMarkdown(sweep, chartFile: $0) }, to: folder, name: name)
    }
}

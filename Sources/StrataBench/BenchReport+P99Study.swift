import Foundation

/// The report of a tick-p99 study (`strata bench --repeat K`): every run's p99s, the
/// spread of Strata's ratio and of the twin's, and the target judged on the medians.
extension BenchReport {
    package static func p99StudyTable(_ study: P99Study) -> String {
        var lines = ["  " + pad("N", 9, left: true) + pad("M", 7, left: true) + pad("runs", 6)
                     + pad("Strata/baseline median (range, ≤ 1.10)", 42) + pad("twin/baseline median (range, ≤ 1.10)", 40)]
        for point in study.points {
            lines.append("  " + pad("\(point.entities)", 9, left: true) + pad("\(point.moving)", 7, left: true)
                         + pad("\(point.runs.count)", 6) + pad(spread(point.strataRatios), 42) + pad(spread(point.twinRatios), 40))
        }
        lines.append("(p99 of each run's tick times, each over the baseline's in the same run; the twin does the baseline's work on a world of its own)")
        return lines.joined(separator: "\n")
    }

    /// `1.04× (0.93–1.12×, 8 of 10)`.
    static func spread(_ summary: RatioSummary) -> String {
        String(format: "%.2f× (%.2f–%.2f×, %d of %d)", summary.median, summary.least, summary.most,
               summary.within10Percent, summary.count)
    }

    /// The tick target (tick p99 within noise of the baseline), judged on the median of the runs at each size.
    package static func p99StudyChecks(_ study: P99Study) -> [Check] {
        study.points.map { point in
            let strata = point.strataRatios, twin = point.twinRatios
            return Check(claim: "At N = \(point.entities) (M = \(point.moving)), the median over \(point.runs.count) runs of Strata's tick p99 is within 10 % of the baseline's",
                         measured: "Strata " + spread(strata) + "; twin (no persistence) " + spread(twin),
                         met: strata.median <= 1.1)
        }
    }

    package static func p99StudyMarkdown(_ study: P99Study) -> String {
        let o = study.options
        var md = """
            # Tick p99 side by side, run after run

            The baseline (no persistence), Strata (default config) and the twin (the baseline's work again, on a world of \
            its own) tick in one loop at \(o.hz) Hz, each tick applied to all three in an order drawn afresh and timed \
            apart; N entities, M of them moving every tick, one critical change (a label edit) per second. Each run is \
            \(o.seconds) simulated seconds or more (2.5 derived intervals), from a fresh folder. A run's tick p99 is its \
            1 %-slowest tick: a few ticks, which a moment of interference on a shared machine decides, so one run says \
            little. The twin's ratio shows how far the harness alone moves the figure when both sides do the same work; \
            the median over the runs is what the target is judged on.

            - Command: `\(study.command)`
            - Machine: \(study.machine)
            - Date: \(study.date)

            | N | M | runs | Strata / baseline: median (range, runs ≤ 1.10) | twin / baseline: median (range, runs ≤ 1.10) |
            |---|---|---|---|---|

            """
        for point in study.points {
            md += "| \(point.entities) | \(point.moving) | \(point.runs.count) | \(spread(point.strataRatios)) | \(spread(point.twinRatios)) |\n"
        }
        md += "\n## What it must show\n\n| claim | measured | |\n|---|---|---|\n"
        for check in p99StudyChecks(study) {
            md += "| \(check.claim) | \(check.measured) | \(check.met.map { $0 ? "met" : "**not met**" } ?? "") |\n"
        }
        for point in study.points {
            md += """

                ## N = \(point.entities), M = \(point.moving): every run

                | run | p50 baseline / Strata / twin (ms) | p99 baseline / Strata / twin (ms) | Strata / baseline | twin / baseline |
                |---|---|---|---|---|

                """
            for (i, run) in point.runs.enumerated() {
                md += String(format: "| %d | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.2f× | %.2f× |\n", i + 1,
                             run.baselineP50Ms, run.strataP50Ms, run.twinP50Ms, run.baselineP99Ms, run.strataP99Ms,
                             run.twinP99Ms, run.strataRatio, run.twinRatio)
            }
        }
        return md
    }

    /// `NAME.json` and `NAME.md` in `folder` (no chart); returns their paths.
    package static func write(_ study: P99Study, to folder: URL, name: String) throws -> [String] {
        try writeFiles(json: json(study), svg: nil, markdown: { _ in p99StudyMarkdown(study) }, to: folder, name: name)
    }
}

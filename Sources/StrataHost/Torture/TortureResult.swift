import Foundation
import Strata

/// What one mode of `strata torture` found: the row of its table, and the JSON.
struct TortureResult: Codable, Sendable {
    var mode: String
    var seed: UInt64
    /// Cycles run (power cuts, kills), or fault runs (eio, enospc).
    var cycles = 0
    /// Individual checks made (a change found or not, a file verified…).
    var checks = 0
    /// Faults that fired: power cuts, kills, injected I/O errors.
    var faults = 0
    var failuresByKind: [String: Int] = [:]
    /// The first failures, in full.
    var failures: [ContractCheck.Failure] = []
    /// The age at the fault of the oldest change lost, per tier, over every cycle (ms).
    var worstCriticalAtRiskMs: Double?
    var worstDerivedAtRiskMs: Double?
    /// Where the files of failed cycles were kept.
    var keptFiles: [String] = []
    /// Per mode: what else was seen (sites walked, cuts applied).
    var details: [String: Int] = [:]
    var seconds = 0.0

    var failureCount: Int { failuresByKind.values.reduce(0, +) }

    init(mode: String, seed: UInt64) {
        self.mode = mode
        self.seed = seed
    }

    /// Adds a cycle's outcome; returns true if it failed.
    mutating func absorb(_ outcome: ContractCheck.Outcome, cycle: Int) -> Bool {
        checks += outcome.checks
        if let age = outcome.criticalAtRisk { worstCriticalAtRiskMs = max(worstCriticalAtRiskMs ?? 0, age.milliseconds) }
        if let age = outcome.derivedAtRisk { worstDerivedAtRiskMs = max(worstDerivedAtRiskMs ?? 0, age.milliseconds) }
        for failure in outcome.failures {
            failuresByKind[failure.kind.rawValue, default: 0] += 1
            if failures.count < 50 {
                failures.append(ContractCheck.Failure(kind: failure.kind, detail: "cycle \(cycle): \(failure.detail)"))
            }
        }
        return !outcome.failures.isEmpty
    }

    mutating func fail(_ kind: ContractCheck.Kind, _ detail: String, cycle: Int) {
        var outcome = ContractCheck.Outcome()
        outcome.fail(kind, detail)
        _ = absorb(outcome, cycle: cycle)
    }

    /// The table `strata torture` prints: one row per mode.
    static func table(_ results: [TortureResult]) -> String {
        func ms(_ v: Double?) -> String { v.map { String(format: "%.0f ms", $0) } ?? "none lost" }
        var lines = [
            "| mode | cycles | faults | checks | failures | worst critical at risk | worst derived at risk | seconds |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in results {
            let failures = r.failureCount == 0 ? "0"
                : r.failuresByKind.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            lines.append("| \(r.mode) | \(r.cycles) | \(r.faults) | \(r.checks) | \(failures) | \(ms(r.worstCriticalAtRiskMs)) | \(ms(r.worstDerivedAtRiskMs)) | \(String(format: "%.0f", r.seconds)) |")
        }
        return lines.joined(separator: "\n")
    }
}

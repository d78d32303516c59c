import Foundation
import Testing
@testable import Strata

/// The convergence fuzzer (`Support/ConvergenceFuzzer.swift`): after healing, every replica
/// holds the same replicated world. A short run here; `make fuzz-sync` runs ≥ 1000 rounds
/// (`STRATA_FUZZ_ROUNDS`, `STRATA_FUZZ_SEEDS`, `STRATA_FUZZ_SEED` for one seed).
@Suite struct ConvergenceFuzzTests {
    static let environment = ProcessInfo.processInfo.environment
    static let rounds = Int(environment["STRATA_FUZZ_ROUNDS"] ?? "") ?? 150
    static let seeds: [UInt64] = environment["STRATA_FUZZ_SEED"].flatMap(UInt64.init).map { [$0] }
        ?? (1 ... UInt64(Int(environment["STRATA_FUZZ_SEEDS"] ?? "") ?? 6)).map { $0 &* 7_919 &+ 20_261_126 }

    @Test(arguments: seeds)
    func replicasConverge(seed: UInt64) throws {
        var fuzzer = ConvergenceFuzzer(seed: seed, rounds: Self.rounds)
        let outcome = try fuzzer.run()
        let converged = Set(outcome.digests).count == 1
        #expect(converged, """
            seed \(seed) (rerun: STRATA_FUZZ_SEED=\(seed) swift test --filter ConvergenceFuzzTests): digests \(outcome.digests), \
            shapes \(outcome.entities); last steps: \(fuzzer.log.suffix(25).joined(separator: "; "))
            """)
        #expect(outcome.operations > 0)
        if Self.environment["STRATA_FUZZ_VERBOSE"] != nil {
            print("seed \(seed): \(outcome.digests.count) replicas\(outcome.clockAhead ? " (one 10 min ahead)" : ""), \(outcome.operations) operations, \(outcome.deliveries) deliveries, \(outcome.crashes) crashes, shapes \(outcome.entities), digest \(outcome.digests[0])")
        }
    }
}

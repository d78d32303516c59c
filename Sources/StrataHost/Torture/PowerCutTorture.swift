import Foundation
import Strata
import StrataTesting
import StrataCanvas

/// `strata torture --mode drop|torn`: the canvas runs in this process through the fault
/// VFS; each cycle ends in a simulated power cut at a random moment. The engine is
/// abandoned (as the process would be), the files are left as the disk would hold them
/// (``FaultVFS/applyPowerLoss(_:seed:)``), and the document is reopened and checked.
/// The reopened engine runs the next cycle: every session after a cut must work.
///
/// Bounds: a critical change older than its commit bound at the cut must be there (its
/// commit synced the WAL); a derived change, if it was made a commit bound before the
/// last sync that reached the disk (its commit needed a later WAL sync to survive).
struct PowerCutTorture {
    let setup: TortureSetup
    let mode: FaultVFS.PowerLoss
    let cycles: Int

    func run(progress: (Int, TortureResult) -> Void) throws -> TortureResult {
        var result = TortureResult(mode: mode.rawValue, seed: setup.seed)
        let started = MonotonicClock().now()
        let vfs = try FaultVFS.register(name: "strata-torture")
        vfs.reset()
        var options = Engine.Options()
        options.vfs = vfs.name
        var rng = SplitMix64(seed: setup.seed)
        let tracePath = setup.directory.appendingPathComponent("trace-\(mode.rawValue).txt").path
        let lastCut = setup.directory.appendingPathComponent("last-cut").path
        var engine = try Engine.open(config: setup.config, components: canvasComponents, logger: setup.logger, options: options)
        var crashes = engine.recovery.session.crashCount

        for cycle in 1 ... cycles {
            try? FileManager.default.removeItem(atPath: tracePath)
            let trace = try CriticalTrace(path: tracePath)
            let scenario = setup.scenario(engine, seed: rng.next(), trace: trace)
            setup.run(scenario, on: engine, for: rng.duration(in: 0.1 ... 0.55))

            let cut = MonotonicClock().now()
            vfs.cutPower()
            let lastSync = vfs.state.lastSync
            engine.abandon()
            let applied = try vfs.applyPowerLoss(mode, seed: rng.next())
            try? FileManager.default.removeItem(atPath: setup.databasePath + "-shm")
            result.faults += 1
            result.details["changes_undone", default: 0] += applied.changes
            result.details["changes_kept", default: 0] += applied.kept
            result.details["changes_torn", default: 0] += applied.torn
            result.details["files_vanished", default: 0] += applied.vanished
            _ = setup.keepFiles(in: lastCut)

            do {
                engine = try Engine.open(config: setup.config, components: canvasComponents, logger: setup.logger, options: options)
            } catch {
                result.fail(.reopen, "\(error)", cycle: cycle)
                result.keptFiles.append(setup.keepFiles(in: setup.directory.appendingPathComponent("failed-\(mode.rawValue)-\(cycle)").path))
                result.cycles = cycle
                break
            }
            crashes += 1
            let check = ContractCheck(
                fault: cut, criticalCutoff: cut - setup.criticalCommitBound,
                derivedCutoff: lastSync.map { $0 - setup.derivedCommitBound }, expectedCrashCount: crashes)
            let outcome = check.run(engine, trace: CriticalTrace.read(tracePath))
            crashes = engine.recovery.session.crashCount
            if result.absorb(outcome, cycle: cycle) {
                result.keptFiles.append(setup.keepFailure(lastCut, trace: tracePath, as: "failed-\(mode.rawValue)-\(cycle)"))
            }
            result.cycles = cycle
            progress(cycle, result)
        }
        do {
            try engine.shutdown()
        } catch {
            result.fail(.reopen, "the last session could not shut down: \(error)", cycle: result.cycles)
        }
        result.seconds = MonotonicClock().now().duration(since: started).seconds
        return result
    }
}

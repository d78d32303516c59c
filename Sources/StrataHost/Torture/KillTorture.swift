import Foundation
import Strata
import StrataCanvas

/// `strata torture --mode sigkill`: each cycle runs `strata sim` on the document in a
/// child process and kills it with SIGKILL at a random moment after it has opened the
/// document; this process then reopens the document, checks it, and shuts it down
/// cleanly for the next child.
///
/// Bounds: a critical change older than its commit bound at the kill must be there; a
/// derived change older than its commit bound too (the kernel keeps what was written).
struct KillTorture {
    let setup: TortureSetup
    let cycles: Int

    func run(progress: (Int, TortureResult) -> Void) throws -> TortureResult {
        var result = TortureResult(mode: "sigkill", seed: setup.seed)
        let clock = MonotonicClock()
        let started = clock.now()
        var rng = SplitMix64(seed: setup.seed)
        let configPath = setup.directory.appendingPathComponent("torture.toml").path
        try setup.config.renderTOML().write(toFile: configPath, atomically: true, encoding: .utf8)
        let tracePath = setup.directory.appendingPathComponent("trace-sigkill.txt").path
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let lastKill = setup.directory.appendingPathComponent("last-kill").path

        // The document's first session, so every cycle's child resumes one.
        var crashes = 0
        do {
            let engine = try Engine.open(config: setup.config, components: canvasComponents, logger: setup.logger)
            crashes = engine.recovery.session.crashCount
            try engine.shutdown()
        }

        for cycle in 1 ... cycles {
            try? FileManager.default.removeItem(atPath: tracePath)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["sim", "--config", configPath, "--seed", String(rng.next() >> 1),
                               "--entities", String(TortureSetup.shapes), "--activity", String(TortureSetup.activity),
                               "--trace-critical", tracePath, "--log-level", "critical"]
            let output = Pipe()
            child.standardOutput = output
            child.standardError = FileHandle.nullDevice
            try child.run()
            // The child prints the document's path once it has opened it (and marked its
            // session running); the kill falls at a random moment after that.
            guard Self.waitForLine(output.fileHandleForReading.fileDescriptor, timeout: .seconds(30)) else {
                kill(child.processIdentifier, SIGKILL)
                child.waitUntilExit()
                result.fail(.unexpectedExit, "the sim did not open the document (exit status \(child.terminationStatus))", cycle: cycle)
                result.cycles = cycle
                break
            }
            usleep(UInt32(rng.duration(in: 0.05 ... 0.55).nanoseconds / 1000))
            let killedAt = clock.now()
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            try? output.fileHandleForReading.close()
            result.faults += 1
            if child.terminationReason != .uncaughtSignal || child.terminationStatus != SIGKILL {
                result.fail(.unexpectedExit, "the sim had exited with status \(child.terminationStatus) before the kill", cycle: cycle)
            }
            _ = setup.keepFiles(in: lastKill)

            let engine: Engine
            do {
                engine = try Engine.open(config: setup.config, components: canvasComponents, logger: setup.logger)
            } catch {
                result.fail(.reopen, "\(error)", cycle: cycle)
                let kept = setup.directory.appendingPathComponent("failed-sigkill-\(cycle)").path
                try? FileManager.default.moveItem(atPath: lastKill, toPath: kept)
                result.keptFiles.append(kept)
                result.cycles = cycle
                break
            }
            crashes += 1
            let check = ContractCheck(
                fault: killedAt, criticalCutoff: killedAt - setup.criticalCommitBound,
                derivedCutoff: killedAt - setup.derivedCommitBound, expectedCrashCount: crashes)
            let outcome = check.run(engine, trace: CriticalTrace.read(tracePath))
            crashes = engine.recovery.session.crashCount
            let failed = result.absorb(outcome, cycle: cycle)
            do {
                try engine.shutdown()
            } catch {
                result.fail(.reopen, "the checking session could not shut down: \(error)", cycle: cycle)
            }
            if failed {
                result.keptFiles.append(setup.keepFailure(lastKill, trace: tracePath, as: "failed-sigkill-\(cycle)"))
            }
            result.cycles = cycle
            progress(cycle, result)
        }
        result.seconds = clock.now().duration(since: started).seconds
        return result
    }

    /// Waits until `fd` yields a newline (or ends, or the time runs out).
    static func waitForLine(_ fd: Int32, timeout: Duration) -> Bool {
        let deadline = MonotonicClock().now() + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = deadline.duration(since: MonotonicClock().now())
            guard left > .zero else { return false }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(max(1, left.milliseconds)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return false }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { return false }
            if buffer[0 ..< n].contains(UInt8(ascii: "\n")) { return true }
        }
    }
}

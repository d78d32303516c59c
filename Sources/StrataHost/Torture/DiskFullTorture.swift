import Foundation
import Strata
import StrataCanvas

/// `strata torture --mode diskfull`: each cycle runs `strata sim` on a document in a small
/// tmpfs that a filler file has all but filled. In half the cycles the filler goes at a
/// random moment (the disk frees again); in the other half it stays to the end, through
/// the shutdown. Then this process frees the disk, reopens the document and checks it
/// against the sim's trace of critical changes.
///
/// - Freed: the sim exits 0 and every critical change it made is in the file: none lost.
/// - Never freed: whatever did not reach the file is in the side file (put back by
///   ``Engine/replayRejectedWrites()``), or counted as lost in the sim's summary: changes
///   missing after the replay are at most the rows it said were lost.
///
/// Three cycles in four begin with a session that has room (it makes the disk reserve,
/// `PATH.reserve`); the fourth begins on the full disk. Needs root (it mounts a tmpfs).
struct DiskFullTorture {
    let setup: TortureSetup
    let cycles: Int

    /// The tmpfs, and the free space the filler leaves (bytes).
    static let diskBytes = 4 * 1024 * 1024
    static let freeRange = 64 * 1024 ... 768 * 1024
    static let runSeconds = 4.0

    func run(progress: (Int, TortureResult) -> Void) throws -> TortureResult {
        var result = TortureResult(mode: "diskfull", seed: setup.seed)
        let clock = MonotonicClock()
        let started = clock.now()
        var rng = SplitMix64(seed: setup.seed)
        let disk = setup.directory.appendingPathComponent("disk").path
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        guard Self.shell("mount", "-t", "tmpfs", "-o", "size=\(Self.diskBytes)", "tmpfs", disk) == 0 else {
            throw TortureError("diskfull needs root: mount -t tmpfs on \(disk) failed")
        }
        defer { _ = Self.shell("umount", "-l", disk) }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var config = setup.config
        config.database.path = disk + "/canvas.db"
        let configPath = setup.directory.appendingPathComponent("diskfull.toml").path
        try config.renderTOML().write(toFile: configPath, atomically: true, encoding: .utf8)
        let tracePath = setup.directory.appendingPathComponent("trace-diskfull.txt").path
        let onDisk = TortureSetup(directory: setup.directory, config: config, seed: setup.seed, logger: setup.logger)
        let filler = disk + "/filler"

        for cycle in 1 ... cycles {
            let frees = cycle % 2 == 1
            for file in (try? FileManager.default.contentsOfDirectory(atPath: disk)) ?? [] {
                try? FileManager.default.removeItem(atPath: disk + "/" + file)
            }
            try? FileManager.default.removeItem(atPath: tracePath)
            // The document's first session, with room: it makes the disk reserve.
            if cycle % 4 != 0 {
                let engine = try Engine.open(config: config, components: canvasComponents, logger: setup.logger)
                try engine.shutdown()
            }
            let free = Int.random(in: Self.freeRange, using: &rng)
            Self.fill(filler, leaving: free, in: disk)

            let child = Process()
            child.executableURL = URL(fileURLWithPath: executable)
            child.arguments = ["sim", "--config", configPath, "--seed", String(rng.next() >> 1),
                               "--entities", "400", "--activity", String(TortureSetup.activity),
                               "--duration", String(Self.runSeconds), "--trace-critical", tracePath, "--log-level", "critical"]
            let output = Pipe()
            child.standardOutput = output
            let errors = Pipe()
            child.standardError = errors
            let collected = OutputBuffer(output.fileHandleForReading)
            let collectedErrors = OutputBuffer(errors.fileHandleForReading)
            try child.run()
            result.faults += 1
            if frees {
                usleep(UInt32(rng.duration(in: 0.5 ... Self.runSeconds - 1).nanoseconds / 1000))
                try? FileManager.default.removeItem(atPath: filler)
            }
            child.waitUntilExit()
            let exitedAt = clock.now()
            let summary = collected.text()
            let stderr = collectedErrors.text()
            try? FileManager.default.removeItem(atPath: filler)   // room for the check
            let trace = CriticalTrace.read(tracePath)
            if child.terminationStatus != 0 && trace.isEmpty {
                // Too full to begin the document: nothing was made, nothing can be lost.
                // It must say why.
                if !stderr.contains("cannot open the database") {
                    result.fail(.unexpectedExit, "the sim exited with status \(child.terminationStatus) before it began: \(stderr.suffix(400))", cycle: cycle)
                }
                result.details["too_full_to_open", default: 0] += 1
                result.cycles = cycle
                continue
            }

            if frees && (child.terminationReason != .exit || child.terminationStatus != 0) {
                result.fail(.unexpectedExit, "the disk freed again, yet the sim exited with status \(child.terminationStatus): \(summary.suffix(200)) \(stderr.suffix(300))", cycle: cycle)
            }
            let claimedLost = Self.lostRows(in: summary)
            if frees, let claimedLost, claimedLost > 0 {
                result.fail(.criticalLost, "the disk freed again, yet the sim says \(claimedLost) rows were lost", cycle: cycle)
            }
            let kept = onDisk.keepFiles(in: setup.directory.appendingPathComponent("last-diskfull").path)

            let engine: Engine
            do {
                engine = try Engine.open(config: config, components: canvasComponents, logger: setup.logger)
                if !frees { try engine.replayRejectedWrites(); engine.flushNow() }
            } catch {
                result.fail(.reopen, "\(error)", cycle: cycle)
                result.keptFiles.append(onDisk.keepFailure(kept, trace: tracePath, as: "failed-diskfull-\(cycle)"))
                result.cycles = cycle
                continue
            }
            // Everything the sim did before it exited counts: its shutdown drained every tier.
            let check = ContractCheck(fault: exitedAt, criticalCutoff: exitedAt, derivedCutoff: nil,
                                      expectedCrashCount: engine.recovery.session.crashCount, expectCrash: nil)
            var outcome = check.run(engine, trace: trace)
            if !frees {
                // What the sim says it lost may be missing; nothing more.
                let missing = outcome.failures.filter { $0.kind == .criticalLost }.count
                if let claimedLost, missing <= claimedLost {
                    outcome.failures.removeAll { $0.kind == .criticalLost }
                    outcome.criticalAtRisk = nil   // the losses it counted and said
                    outcome.derivedAtRisk = nil
                }
                if claimedLost == nil { outcome.fail(.unexpectedExit, "no summary from the sim: \(summary.suffix(300)) \(stderr.suffix(300))") }
                result.details["stays_full_rows_lost", default: 0] += claimedLost ?? 0
                if (claimedLost ?? 0) > 0 { result.details["stays_full_cycles_with_losses", default: 0] += 1 }
            }
            try? engine.shutdown()
            if result.absorb(outcome, cycle: cycle) {
                result.keptFiles.append(onDisk.keepFailure(kept, trace: tracePath, as: "failed-diskfull-\(cycle)"))
            }
            result.details[frees ? "freed" : "stayed_full", default: 0] += 1
            result.cycles = cycle
            progress(cycle, result)
        }
        result.seconds = clock.now().duration(since: started).seconds
        return result
    }

    /// "failures     7 failed commits (retried), 0 rows rejected and parked, 3 lost" → 3.
    static func lostRows(in summary: String) -> Int? {
        guard let line = summary.split(separator: "\n").first(where: { $0.contains("failures") && $0.hasSuffix(" lost") }),
              let count = line.split(separator: ",").last?.split(separator: " ").first else { return nil }
        return Int(count)
    }

    /// A file that leaves about `free` bytes on the filesystem of `folder`.
    static func fill(_ path: String, leaving free: Int, in folder: String) {
        var stats = statvfs()
        guard statvfs(folder, &stats) == 0 else { return }
        let available = Int(stats.f_bavail) * Int(stats.f_frsize)
        let size = max(0, available - free)
        _ = FileManager.default.createFile(atPath: path, contents: Data(count: size))
    }

    @discardableResult
    static func shell(_ arguments: String...) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// A torture mode that cannot run here.
struct TortureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Reads a pipe to its end on a thread of its own (a child's output never fills it).
final class OutputBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let all = handle.readDataToEndOfFile()
            lock.withLock { data = all }
            done.signal()
        }
    }

    func text() -> String {
        done.wait()
        return lock.withLock { String(decoding: data, as: UTF8.self) }
    }
}

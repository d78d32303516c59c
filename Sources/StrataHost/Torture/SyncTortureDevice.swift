import Foundation
import Strata

/// One device of the sync checker: `strata sim --sync` sessions, one at a time, in the
/// device's network namespace, on its own file, its clock moved when it
/// has an offset (`--clock-offset`: the engine's wall clock moved). The checker kills it (SIGKILL), cuts its power (SIGUSR2, the fault VFS)
/// or stops it (SIGTERM), and starts it again.
final class SyncTortureDevice {
    let index: Int
    let folder: URL
    var databasePath: String { folder.appendingPathComponent("device.db").path }
    /// `--trace-operations`: when each of its operations was logged.
    var tracePath: String { folder.appendingPathComponent("operations.trace").path }
    /// Its token for the sync service (through the service only).
    var tokenPath: String { folder.appendingPathComponent("token").path }
    /// A CA bundle bound over the system's in its namespace (through the service only: the
    /// service's certificate is trusted as a public CA's would be).
    var trustBundle: String?
    private var logPath: String { folder.appendingPathComponent("sessions.log").path }
    private(set) var process: SpawnedProcess?
    /// Its clock's offset from the real one (s), applied to the sessions started from now on.
    var clockOffset = 0
    /// Every clock offset its sessions had.
    private(set) var offsetsUsed: Set<Int> = [0]
    /// The instants (`CLOCK_MONOTONIC`) of its kills and power cuts.
    private(set) var faults: [Instant] = []
    private(set) var sessions = 0
    private var startedAt = MonotonicClock().now()
    /// Power cuts that came before the session had set its fault VFS up (SIGUSR2 ended it).
    private(set) var powerCutsBeforeSetUp = 0
    /// Stops that came before the session had set its signal handlers up (SIGTERM ended it).
    private(set) var stopsBeforeSetUp = 0
    /// Sessions that ended otherwise than as asked (a trap, an error exit).
    private(set) var unexpectedExits: [String] = []

    init(index: Int, folder: URL) throws {
        self.index = index
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    var isRunning: Bool { process?.isRunning ?? false }

    /// Starts a session: `arguments` after `strata sim --db … --config …`.
    func start(strata: String, config: String, arguments: [String]) throws {
        precondition(!isRunning, "one session at a time")
        let environment = ["STRATA_DEVICE=\(index)"]
        offsetsUsed.insert(clockOffset)
        let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }  // the log is for reading after; the run goes on without it
        let log = FileHandle(forWritingAtPath: logPath)
        log?.seekToEndOfFile()
        log?.write(Data("--- session \(sessions + 1), clock \(clockOffset) s: \(arguments.joined(separator: " "))\n".utf8))
        try? log?.close()
        startedAt = MonotonicClock().now()
        let trusting = trustBundle.map { ["/bin/sh", "-c", #"mount --bind "$0" "$1" && shift && exec "$@""#, $0, SyncTortureService.systemBundle] } ?? []
        process = try SpawnedProcess([ip, "netns", "exec", SyncTortureNetwork.namespace(index)] + trusting + ["/usr/bin/env"] + environment
            + [strata, "sim", "--db", databasePath, "--config", config, "--log-level", "warning", "--power-cuts",
               "--trace-operations", tracePath, "--clock-offset", "\(clockOffset)"] + arguments, output: logPath)
        sessions += 1
    }

    /// SIGKILL, noted as a fault.
    func kill() {
        guard let process, process.isRunning else { return }
        faults.append(MonotonicClock().now())
        process.signal(SIGKILL)
        process.wait()
        self.process = nil
    }

    /// A power cut: SIGUSR2 makes the session drop every unsynced write and end at once
    /// (within a tick); noted as a fault at the signal. Killed if it does not end.
    func cutPower() {
        guard let process, process.isRunning else { return }
        faults.append(MonotonicClock().now())
        process.signal(SIGUSR2)
        if !process.wait(seconds: 5) {
            process.signal(SIGKILL)
            process.wait()
        } else if process.endingSignal == SIGUSR2 {
            powerCutsBeforeSetUp += 1   // the session had not set its fault VFS up yet: as a kill
        } else if process.exitCode != DeviceFaults.powerCutStatus {
            unexpectedExits.append("session \(sessions) ended with \(process.exitCode.map { "status \($0)" } ?? "a signal") at a power cut")
        }
        self.process = nil
    }

    /// SIGTERM: a clean stop (the session shuts down), waited for (SIGKILL after 30 s, noted).
    /// A session younger than 1.5 s is given that long first: its handlers are set by then,
    /// as a rule. One that SIGTERM still ended (a start slower than that on a loaded machine:
    /// with its handler set, the signal ends no session) had logged nothing yet: noted as a
    /// kill, as a power cut before the fault VFS is.
    func stop() {
        guard let process else { return }
        let age = MonotonicClock().now().duration(since: startedAt)
        if process.isRunning, age < .milliseconds(1_500) { usleep(UInt32((Duration.milliseconds(1_500) - age).nanoseconds / 1_000)) }
        if process.isRunning {
            let signalled = MonotonicClock().now()
            process.signal(SIGTERM)
            if !process.wait(seconds: 30) {
                unexpectedExits.append("session \(sessions) did not stop within 30 s of SIGTERM (killed)")
                process.signal(SIGKILL)
                process.wait()
                self.process = nil
                return
            }
            if process.endingSignal == SIGTERM {
                faults.append(signalled)
                stopsBeforeSetUp += 1
                self.process = nil
                return
            }
        }
        noteExit(process)
        self.process = nil
    }

    /// Waits for a session that ends by itself (`--duration`); stopped after `seconds`.
    func waitForExit(seconds: Double) {
        guard let process else { return }
        if !process.wait(seconds: seconds) { stop(); return }
        noteExit(process)
        self.process = nil
    }

    private func noteExit(_ process: SpawnedProcess) {
        if process.exitCode != 0 {
            unexpectedExits.append("session \(sessions) ended with " + (process.exitCode.map { "status \($0)" } ?? "signal \(process.endingSignal ?? 0)"))
        }
    }

    /// The trace's lines: (node, sequence, instant logged).
    func tracedOperations() -> [(node: String, seq: Int64, at: Instant)] {
        guard let text = try? String(contentsOfFile: tracePath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, let seq = Int64(parts[1]), let ns = Int64(parts[2]) else { return nil }
            return (String(parts[0]), seq, Instant(nanoseconds: ns))
        }
    }
}

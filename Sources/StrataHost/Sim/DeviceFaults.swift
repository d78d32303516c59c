import Foundation
import Strata
import StrataTesting
import Synchronization

/// A power cut asked for by SIGUSR2 (set by the handler, polled by the tick loop).
private let powerCutRequested = Atomic<Bool>(false)

/// What `strata sim` does for the sync checker (`strata torture --mode sync`), which runs
/// it as one device among several: hidden options, off by default. Tick thread.
///
/// - `--power-cuts`: the engine's files go through the fault VFS, and SIGUSR2 cuts the
///   power: nothing written from that moment reaches the files, every change since a
///   file's last sync is undone (as a disk that lost power leaves it), and the process
///   ends at once (exit status 75), without a shutdown.
/// - `--trace-operations FILE`: a line `NODE SEQ NS` each time this device's operations
///   reach sequence SEQ, NS the `CLOCK_MONOTONIC` instant (the checker's clock too): which
///   operations were logged how long before a kill or a cut.
/// - `--clock-offset SECONDS`: the engine's wall clock (its operations' stamps, its
///   hybrid clock, what it compares with the server's) runs that far from the real one. The
///   checker's clock jumps; libfaketime would do it for the whole process, but under its
///   `LD_PRELOAD` a Swift program sees no command-line arguments (`CommandLine.arguments`
///   is empty: tried with Debian 12's libfaketime and this toolchain).
final class DeviceFaults {
    static let powerCutStatus: Int32 = 75
    private let vfs: FaultVFS?
    private let trace: FileHandle?
    private var traced: Int64 = 0
    private let seed: UInt64
    private let clockOffsetMilliseconds: Int64

    init(powerCuts: Bool, traceOperations: String?, clockOffset: Double, seed: UInt64) throws {
        self.seed = seed
        clockOffsetMilliseconds = Int64(clockOffset * 1000)
        if powerCuts {
            vfs = try FaultVFS.register(name: "strata-device")
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { _ in powerCutRequested.store(true, ordering: .relaxed) }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(SIGUSR2, &action, nil)
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGUSR2)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
        } else {
            vfs = nil
        }
        if let path = traceOperations {
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }  // the open below says if not
            guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteNoPermission) }
            handle.seekToEndOfFile()
            trace = handle
        } else {
            trace = nil
        }
    }

    /// The engine's VFS (when power cuts are on) and wall clock.
    func configure(_ options: inout Engine.Options) {
        if let vfs { options.vfs = vfs.name }
        if clockOffsetMilliseconds != 0 {
            let offset = clockOffsetMilliseconds
            options.wallClock = { Int64(Date().timeIntervalSince1970 * 1000) + offset }
        }
    }

    /// After each tick: the operations logged so far, and a power cut if one was asked for.
    func afterTick(_ engine: Engine) {
        // The cut first: what this tick logged after the signal is not traced as logged
        // before it (the checker compares the trace's instants with the signal's).
        if let vfs, powerCutRequested.load(ordering: .relaxed) {
            vfs.cutPower()
            let path = engine.store.location.path
            _ = try? vfs.applyPowerLoss(.drop, seed: seed)
            unlink(path + "-shm")
            _exit(Self.powerCutStatus)
        }
        if let trace {
            let highest = engine.world.operationLog.nextSequence - 1
            if highest > traced {
                traced = highest
                trace.write(Data("\(engine.nodeID) \(highest) \(MonotonicClock().now().nanoseconds)\n".utf8))
            }
        }
    }
}

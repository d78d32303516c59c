import Foundation
import Synchronization

/// SIGINT and SIGTERM turned into a flag the tick loop polls: the loop then shuts the
/// engine down cleanly instead of dying mid-batch. SIGTSTP (Ctrl-Z) is counted: the loop
/// flushes as an app going to the background, then stops the process itself.
final class SignalFlags: Sendable {
    private final class Flag: Sendable {
        let signal = Atomic<Int32>(0)
        let suspends = Atomic<Int>(0)
    }

    private let flag = Flag()
    // DispatchSource is thread-safe; the array is immutable after init.
    nonisolated(unsafe) private let sources: [any DispatchSourceSignal]

    init(handleSuspend: Bool = false) {
        var sources: [any DispatchSourceSignal] = []
        let flag = self.flag
        for sig in [SIGINT, SIGTERM] + (handleSuspend ? [SIGTSTP] : []) {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                if sig == SIGTSTP {
                    flag.suspends.add(1, ordering: .relaxed)
                } else {
                    flag.signal.store(sig, ordering: .relaxed)
                }
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    /// Whether a SIGTSTP arrived since the last call.
    func takeSuspendRequest() -> Bool {
        flag.suspends.exchange(0, ordering: .relaxed) > 0
    }

    /// The signal that asked to stop, or nil.
    var stopSignal: Int32? {
        let value = flag.signal.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }

    deinit { sources.forEach { $0.cancel() } }
}

import Foundation
import Synchronization

/// The signals that ask `strata sim` to stop, and the Ctrl-Z requests, as set by the
/// handlers. Process-wide: a signal disposition is.
private let receivedStop = Atomic<Int32>(0)
private let receivedStops = Atomic<Int>(0)
private let receivedSuspends = Atomic<Int>(0)
/// Stop signals already answered by a shutdown: waits end on one more (``stopWaiting``).
private let answeredStops = Atomic<Int>(0)

/// SIGINT, SIGTERM and SIGHUP (the terminal closed) turned into a flag the tick loop
/// polls: the loop then shuts the engine down cleanly instead of dying mid-batch. SIGTSTP
/// (Ctrl-Z) is counted: the loop flushes as an app going to the background, then stops
/// the process itself.
///
/// Plain `sigaction` handlers that only store to an atomic (async-signal-safe), installed
/// the moment this is created: no window in which a signal is ignored or lost, as there
/// was with dispatch sources (the disposition was set to "ignore" before the source ran).
final class SignalFlags: Sendable {
    init(handleSuspend: Bool = false) {
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            Self.install(sig) {
                receivedStop.store($0, ordering: .relaxed)
                receivedStops.add(1, ordering: .relaxed)
            }
        }
        if handleSuspend {
            Self.install(SIGTSTP) { _ in receivedSuspends.add(1, ordering: .relaxed) }
        }
        // A parent may start us with these blocked (Foundation's Process, from a dispatch
        // thread, passes its mask on): unblock them on this thread, which the tick loop
        // runs on, so the handlers run.
        var set = sigset_t()
        sigemptyset(&set)
        for sig in [SIGINT, SIGTERM, SIGHUP] + (handleSuspend ? [SIGTSTP] : []) { sigaddset(&set, sig) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    private static func install(_ sig: Int32, _ handler: @convention(c) (Int32) -> Void) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(sig, &action, nil)
    }

    /// Whether a SIGTSTP arrived since the last call.
    func takeSuspendRequest() -> Bool {
        receivedSuspends.exchange(0, ordering: .relaxed) > 0
    }

    /// Whether a wait on the engine should end: a stop signal came that no shutdown has
    /// answered yet (before the shutdown, the first; during it, another).
    var stopWaiting: Bool {
        receivedStops.load(ordering: .relaxed) > answeredStops.load(ordering: .relaxed)
    }

    /// The shutdown begins: the signals so far are answered by it, and only a new one
    /// cuts its waits short (the jobs' shutdown timeout).
    func shutdownBegins() {
        answeredStops.store(receivedStops.load(ordering: .relaxed), ordering: .relaxed)
    }

    /// The signal that asked to stop, or nil.
    var stopSignal: Int32? {
        let value = receivedStop.load(ordering: .relaxed)
        return value == 0 ? nil : value
    }
}

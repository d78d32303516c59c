#if canImport(CStrataNetwork)
import CStrataNetwork

/// NetworkManager's `State` and `Connectivity` over D-Bus (`strata_network.c`), every call
/// bounded by `timeout`. Owned by the network monitor's thread.
final class NetworkProbe {
    private let probe: OpaquePointer?

    /// `busAddress`: a D-Bus address to use instead of the system bus.
    init(timeout: Duration, busAddress: String?) {
        probe = strata_network_probe_new(Int32(clamping: Int(timeout.milliseconds.rounded())), busAddress)
    }

    deinit { strata_network_probe_free(probe) }

    /// The connectivity now, and why.
    func read() -> (Connectivity, String) {
        var raw = strata_network_reading()
        strata_network_probe_read(probe, &raw)
        return Self.interpret(raw)
    }

    /// Waits up to `timeout` for a change signal; true if one arrived.
    func waitForChange(timeout: Duration) -> Bool {
        strata_network_probe_wait(probe, Int32(clamping: Int(timeout.milliseconds))) != 0
    }

    private static func interpret(_ raw: strata_network_reading) -> (Connectivity, String) {
        var copy = raw
        let message = withUnsafeBytes(of: &copy.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch raw.status {
        case STRATA_NETWORK_OK:
            // NMState 50 connected (local), 60 (site), 70 (global); NMConnectivityState 1: none.
            let online = raw.state >= 50 && raw.connectivity != 1
            return (online ? .online : .offline, "NetworkManager state \(raw.state), connectivity \(raw.connectivity)")
        case STRATA_NETWORK_NO_BUS: return (.unknown, "no system bus: \(message)")
        case STRATA_NETWORK_NO_DAEMON: return (.unknown, "no NetworkManager on the system bus")
        case STRATA_NETWORK_NOT_ANSWERING: return (.unknown, "NetworkManager is not answering: \(message)")
        default: return (.unknown, "NetworkManager error: \(message)")
        }
    }
}
#else
import Foundation

/// Where there is no NetworkManager (not Linux): the connectivity is unknown, said so, and
/// the sync finds out by trying the server.
final class NetworkProbe {
    init(timeout: Duration, busAddress: String?) {}

    func read() -> (Connectivity, String) { (.unknown, "NetworkManager is Linux's: no network source on this system") }

    func waitForChange(timeout: Duration) -> Bool {
        Thread.sleep(forTimeInterval: timeout.seconds)
        return false
    }
}
#endif

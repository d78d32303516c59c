import Foundation
import Testing

/// The engine's sync checker (`strata torture --mode sync`) with its devices syncing through
/// this package's `strata-server` (`--sync-service`): devices in network namespaces of their
/// own reach the service over HTTPS, through partitions, kills, power cuts, clock jumps, a
/// PostgreSQL stopped hard and the service SIGKILLed and restarted; `make torture-sync`
/// runs it long.
@Suite struct SyncCheckerTests {
    /// `.build/debug/strata-server` of this package (built with its tests).
    static var service: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/strata-server").path
    }

    static let canMakeNetworkNamespaces: Bool = {
        let name = "strata-probe-\(getpid())"
        guard (try? TestPostgres.run("/usr/sbin/ip", ["netns", "add", name])) != nil else { return false }
        _ = try? TestPostgres.run("/usr/sbin/ip", ["netns", "delete", name])
        return true
    }()

    struct Result: Decodable {
        var cycles: Int
        var faults: Int
        var failuresByKind: [String: Int]
        var details: [String: Int]
    }

    /// One checker run: its results, and what it printed when they do not read.
    func check(_ arguments: [String]) throws -> (Result?, String) {
        let folder = NSTemporaryDirectory() + "strata-checker-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let output = NSTemporaryDirectory() + "strata-checker-\(UUID().uuidString).json"
        defer { unlink(output) }
        // The checker exits 1 when the check fails: its JSON says what failed.
        _ = try TestPostgres.run("/bin/sh", ["-c", #""$@" > "$0" 2>/dev/null; exit 0"#, output, SimThroughServiceTests.strata,
                                             "torture", "--mode", "sync", "--dir", folder, "--json", "--sync-service", Self.service] + arguments)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return ((try? JSONDecoder().decode([Result].self, from: Data(text.utf8)))?.first, text)
    }

    @Test(.enabled(if: canMakeNetworkNamespaces, "the devices' networks are namespaces: root, and a kernel that allows them"))
    func replicationThroughTheServiceHoldsUnderFaultsAndTheCheckCanFail() throws {
        try #require(FileManager.default.isExecutableFile(atPath: SimThroughServiceTests.strata), "build the engine's package first")
        let (result, text) = try check(["--cycles", "1", "--seed", "11", "--fault-seconds", "4"])
        let run = try #require(result, "\(text.suffix(2000))")
        #expect(run.cycles == 1)
        #expect(run.failuresByKind.isEmpty, "\(text.suffix(2000))")
        #expect(run.faults >= 2 && (run.details["operations"] ?? 0) > 50, "\(run.details)")
        // Seed 11's schedule kills the service once and stops PostgreSQL hard once.
        #expect((run.details["fault_service_kill"] ?? 0) >= 1 && (run.details["fault_server_stop"] ?? 0) >= 1, "\(run.details)")

        // An operation deleted from the server and one marked as another subject's: caught.
        let (sabotaged, said) = try check(["--cycles", "1", "--seed", "11", "--fault-seconds", "2", "--sabotage-sync"])
        let caught = try #require(sabotaged, "\(said.suffix(2000))")
        #expect(caught.failuresByKind["missing_operation"] != nil, "\(caught.failuresByKind)")
        #expect(caught.failuresByKind["wrong_pusher"] != nil, "\(caught.failuresByKind)")
    }
}

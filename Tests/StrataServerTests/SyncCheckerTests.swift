import Foundation
import Testing

/// The engine's sync checker (`strata torture --mode sync`) with its devices syncing through
/// this package's `strata-server` (`--sync-service`): devices in network namespaces of their
/// own reach the service over HTTPS, through partitions, kills, power cuts, clock jumps, a
/// PostgreSQL stopped hard and the service SIGKILLed and restarted; `make torture-sync`
/// runs it long, after this test (`STRATA_CHECKER_THROUGH_SERVICE=1`). Not in `make test`:
/// with its 3–5 devices, a PostgreSQL and a service of its own it loads two cores enough to
/// make the timing of the tests beside it fail, and its time is over the budget.
@Suite struct SyncCheckerTests {
    static let enabled = ProcessInfo.processInfo.environment["STRATA_CHECKER_THROUGH_SERVICE"] == "1"

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
    func check(_ arguments: [String]) async throws -> (Result?, String) {
        let folder = NSTemporaryDirectory() + "strata-checker-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let output = NSTemporaryDirectory() + "strata-checker-\(UUID().uuidString).json"
        defer { unlink(output) }
        // The checker exits 1 when the check fails: its JSON says what failed.
        let command = ["-c", #""$@" > "$0" 2>/dev/null; exit 0"#, output, SimThroughServiceTests.strata,
                       "torture", "--mode", "sync", "--dir", folder, "--json", "--sync-service", Self.service] + arguments
        _ = try await offThread { try TestPostgres.run("/bin/sh", command) }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return ((try? JSONDecoder().decode([Result].self, from: Data(text.utf8)))?.first, text)
    }

    @Test(.enabled(if: enabled, "make torture-sync-service runs it"),
          .enabled(if: canMakeNetworkNamespaces, "the devices' networks are namespaces: root, and a kernel that allows them"))
    func replicationThroughTheServiceHoldsUnderFaultsAndTheCheckCanFail() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: SimThroughServiceTests.strata), "swift build --build-tests builds strata")
        let (result, text) = try await check(["--cycles", "1", "--seed", "11", "--fault-seconds", "3"])
        let run = try #require(result, "\(text.suffix(2000))")
        #expect(run.cycles == 1)
        #expect(run.failuresByKind.isEmpty, "\(text.suffix(2000))")
        #expect(run.faults >= 2 && (run.details["operations"] ?? 0) > 50, "\(run.details)")
        // Seed 11's schedule kills the service once and stops PostgreSQL hard once.
        #expect((run.details["fault_service_kill"] ?? 0) >= 1 && (run.details["fault_server_stop"] ?? 0) >= 1, "\(run.details)")

        // An operation deleted from the server and one marked as another subject's: caught.
        let (sabotaged, said) = try await check(["--cycles", "1", "--seed", "11", "--fault-seconds", "1", "--sabotage-sync"])
        let caught = try #require(sabotaged, "\(said.suffix(2000))")
        #expect(caught.failuresByKind["missing_operation"] != nil, "\(caught.failuresByKind)")
        #expect(caught.failuresByKind["wrong_pusher"] != nil, "\(caught.failuresByKind)")
    }
}

import Foundation
import Testing
@testable import Strata
import StrataCanvas

/// Devices that join a document others have edited, as users do: `strata sim` processes
/// through a private PostgreSQL server. A new device never resets what the others made,
/// and what one device has under way stays its own.
@Suite(.serialized) struct SharedDocumentTests {
    private func metadata(_ path: String) throws -> DocumentMetadata? {
        try PersistedComponents.read(path).value(DocumentMetadata.self, of: CanvasScenario.documentID)
    }

    @Test func aDeviceThatJoinsOfflineDoesNotResetTheDocument() throws {
        let server = try PrivatePostgres()
        let bus = try PrivateSystemBus()
        try bus.startNetworkManager(state: 70)
        let first = TestDirectory("joinA"), second = TestDirectory("joinB")
        let common = ["--log-level", "error", "--sync", server.url, "--sync-document", "team", "--entities", "10"]

        // A edits the document (its metadata among the rest), and everything reaches the server.
        let a = try ChildProcess.strata(["sim", "--db", first.databasePath, "--duration", "5", "--activity", "8", "--seed", "3",
                                         "--sync-settle", "2"] + common, environment: bus.environment, in: first.url)
        #expect(a.status == 0, "\(a.stderr)")
        let edited = try #require(try metadata(first.databasePath))
        #expect(edited.revision > 0, "A edited the metadata")

        // B opens it for the first time offline: it starts on its defaults.
        try bus.setNetworkState(20)
        let quiet = ["--activity", "0.001", "--seed", "9"]   // B makes its shapes, and no edit of the metadata
        let offline = try ChildProcess.strata(["sim", "--db", second.databasePath, "--duration", "1"] + quiet + common,
                                              environment: bus.environment, in: second.url)
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(try metadata(second.databasePath)?.revision == 0)

        // Online, B pulls A's metadata and keeps it; A pulls B's default and keeps its own.
        try bus.setNetworkState(70)
        let online = try ChildProcess.strata(["sim", "--db", second.databasePath, "--duration", "1", "--sync-settle", "3"] + quiet + common,
                                             environment: bus.environment, in: second.url)
        #expect(online.status == 0, "\(online.stderr)")
        let again = try ChildProcess.strata(["sim", "--db", first.databasePath, "--duration", "1", "--sync-settle", "3"] + quiet + common,
                                            environment: bus.environment, in: first.url)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try metadata(second.databasePath) == edited, "B holds A's metadata")
        #expect(try metadata(first.databasePath) == edited, "A kept its metadata")
        let defaults = try server.sql("SELECT count(*) FROM strata_operations WHERE kind = 'strata.component' AND get_byte(payload, 0) = 2")
        #expect((Int(defaults) ?? 0) >= 2, "both devices' defaults are on the server: \(defaults)")
    }

    /// B opens while A is drawing a stroke: B leaves A's stroke as A draws it, and A ends it.
    @Test func aDeviceThatOpensDoesNotFinishAnotherDevicesStroke() throws {
        let server = try PrivatePostgres()
        let first = TestDirectory("inkA"), second = TestDirectory("inkB")
        let common = ["--sync", server.url, "--sync-document", "ink", "--entities", "10"]
        var caught: EntityID?
        for attempt in 0 ..< 8 where caught == nil {
            let a = try startSim(first, common + ["--seed", "\(attempt + 1)", "--activity", "6", "--duration", "6", "--sync-settle", "2"])
            Thread.sleep(forTimeInterval: 2 + Double(attempt % 3) * 0.4)
            // B opens now, runs a second, and stops: A's strokes in progress are not B's.
            let b = try ChildProcess.strata(["sim", "--db", second.databasePath, "--log-level", "error", "--duration", "1",
                                             "--activity", "0.001", "--sync-settle", "1"] + common)
            #expect(b.status == 0, "\(b.stderr)")
            let file = try PersistedComponents.read(second.databasePath)
            caught = try file.entities.keys.first { try file.value(StrokeStyle.self, of: $0)?.finished == false }
            a.waitUntilExit()
        }
        let stroke = try #require(caught, "B never opened while A was drawing")
        // B stopped with A's stroke unfinished: it did not end it. A ended it, and B has that.
        let last = try ChildProcess.strata(["sim", "--db", second.databasePath, "--log-level", "error", "--duration", "0.5",
                                            "--activity", "0.001", "--sync-settle", "3"] + common)
        #expect(last.status == 0, "\(last.stderr)")
        for path in [first.databasePath, second.databasePath] {
            let file = try PersistedComponents.read(path)
            #expect(try file.value(StrokeStyle.self, of: stroke)?.finished == true, "\(path)")
            #expect(try file.value(StrokePoints.self, of: stroke) == (try PersistedComponents.read(first.databasePath).value(StrokePoints.self, of: stroke)))
        }
        // B's log holds no edit of A's stroke.
        let bNode = try #require(try OperationLogReader(path: second.databasePath).nodeID())
        let bEdits = try OperationLogReader(path: second.databasePath).operations(of: bNode, limit: 100_000)
            .compactMap { try? ReplicatedOperation(kind: $0.kind, payload: $0.payload) }
            .filter { $0.entity == stroke }
        #expect(bEdits.isEmpty, "\(bEdits)")
    }
}

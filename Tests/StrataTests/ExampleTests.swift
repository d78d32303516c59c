import Foundation
import Testing

/// `Examples/GameHost`, a package that embeds Strata as a user's would: its manifest must
/// name Strata as a user's does, and its program keep its world across runs. The program is
/// built with everything else (the main package's `GameHostExample` target has the same
/// source: one package graph to build, not two); `make example` builds the example as a
/// package of its own.
@Suite struct ExampleTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `swift` that runs the tests (the toolchain on PATH).
    static func swift() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        let found = path.split(separator: ":").map { "\($0)/swift" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(found, "no swift on PATH")
    }

    @Test func theExamplesManifestNamesStrataAsAUsersPackageWould() throws {
        let package = Self.root.appendingPathComponent("Examples/GameHost")
        let dump = try ChildProcess.run(try Self.swift(), ["package", "dump-package", "--package-path", package.path])
        try #require(dump.status == 0, "Examples/GameHost/Package.swift does not load:\n\(dump.stderr)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let target = try #require((manifest["targets"] as? [[String: Any]])?.first { $0["name"] as? String == "GameHost" })
        let products = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { ($0["product"] as? [Any])?.first as? String }
        #expect(products.contains("Strata"), "\(products)")
        let source = package.appendingPathComponent("Sources/GameHost/main.swift").path
        #expect(FileManager.default.fileExists(atPath: source))
    }

    @Test func theReadmesEmbeddingIsCompiledAndRuns() throws {
        // The README shows Examples/Embedding/main.swift verbatim, and that file is the
        // main package's `EmbeddingSnippet` target: what a reader copies compiles.
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        var snippet = try String(contentsOf: Self.root.appendingPathComponent("Examples/Embedding/main.swift"), encoding: .utf8)
        while snippet.hasSuffix("\n") { snippet.removeLast() }
        #expect(readme.contains("```swift\n" + snippet + "\n```"), "the README's embedding is not Examples/Embedding/main.swift")

        let binary = Self.root.appendingPathComponent(".build/debug/EmbeddingSnippet").path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "no \(binary): run `swift build` first")
        let directory = TestDirectory()
        for _ in 0 ..< 2 {
            let run = try ChildProcess.run(binary, [], in: directory.url)
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout.isEmpty, "a clean run reports no crash: \(run.stdout)")
        }
        #expect(FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("game.db").path))
    }

    @Test func theEmbeddingExampleKeepsItsWorld() throws {
        let binary = Self.root.appendingPathComponent(".build/debug/GameHostExample").path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "no \(binary): run `swift build` first")

        // No config.toml in the working directory: the defaults.
        let directory = TestDirectory()
        let first = try ChildProcess.run(binary, ["world.db", "--ticks", "30"], in: directory.url)
        #expect(first.status == 0, "\(first.stdout)\n\(first.stderr)")
        #expect(first.stdout.contains("new world: 11 entities"), "\(first.stdout)")
        #expect(first.stdout.contains("saved: player at x=30.0"), "\(first.stdout)")

        let second = try ChildProcess.run(binary, ["world.db", "--ticks", "30"], in: directory.url)
        #expect(second.status == 0, "\(second.stdout)\n\(second.stderr)")
        #expect(second.stdout.contains(#"reloaded 11 entities; player at x=30.0, holding ["arrow": 9]"#), "\(second.stdout)")
        #expect(second.stdout.contains("saved: player at x=60.0"), "\(second.stdout)")
        #expect(!second.stdout.contains("did not shut down cleanly"))
    }
}

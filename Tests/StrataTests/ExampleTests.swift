import Foundation
import Testing

/// `Examples/GameHost`, a package that embeds Strata as a user's would: it must build
/// from the README's instructions and keep its world across runs.
@Suite struct ExampleTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The `swift` that runs the tests (the toolchain on PATH).
    static func swift() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        let found = path.split(separator: ":").map { "\($0)/swift" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(found, "no swift on PATH")
    }

    @Test(.timeLimit(.minutes(10))) func theEmbeddingExampleBuildsAndKeepsItsWorld() throws {
        let package = Self.root.appendingPathComponent("Examples/GameHost")
        let build = try ChildProcess.run(try Self.swift(), ["build", "--package-path", package.path])
        try #require(build.status == 0, "swift build of Examples/GameHost failed:\n\(build.stdout)\n\(build.stderr)")
        let binary = package.appendingPathComponent(".build/debug/GameHost").path

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

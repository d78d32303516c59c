import Foundation
@testable import Strata

/// What the tests that run `strata` as a child process share: finding the binary, starting
/// a quiet `strata sim`, collecting a child's output, and a canvas component the crash tests read.

struct CanvasStrokeStyle: Component {
    static let typeName = "canvas.stroke_style"
    static let tier = Tier.critical
    var color: UInt32, width: Float, finished: Bool
    func encode(to p: inout PayloadWriter) { p.write(color); p.write(width); p.write(finished) }
    init(from p: inout PayloadReader, version: Int) throws { color = try p.read(); width = try p.read(); finished = try p.read() }
}

/// The `strata` executable next to this test bundle (`make test` builds it first).
func strataExecutable() throws -> String {
    if let path = ProcessInfo.processInfo.environment["STRATA_BIN"] { return path }
    let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let candidate = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("strata").path
    guard FileManager.default.isExecutableFile(atPath: candidate) else {
        throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "no strata binary at \(candidate): run `swift build` first (make test does)"])
    }
    return candidate
}

/// Starts `strata sim` on the directory's database, quiet, with `extra` arguments.
func startSim(_ directory: TestDirectory, _ extra: [String]) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try strataExecutable())
    process.arguments = ["sim", "--db", directory.databasePath, "--log-level", "error"] + extra
    process.currentDirectoryURL = directory.url
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// Collects what a child process writes to a pipe, as it arrives.
final class OutputCollector: @unchecked Sendable {
    // @unchecked Sendable: `data` and `closed` are only touched under `lock`.
    private let lock = NSLock()
    private var data = Data()
    private var closed = false

    init(_ handle: FileHandle) {
        handle.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            if chunk.isEmpty { handle.readabilityHandler = nil }
            self?.lock.withLock {
                self?.data.append(chunk)
                if chunk.isEmpty { self?.closed = true }
            }
        }
    }

    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
    var isClosed: Bool { lock.withLock { closed } }
}

import Foundation
import Strata

/// An append-only log of the critical changes `strata sim` makes, one line each:
/// `<CLOCK_MONOTONIC ns> <op> <entity id> [<revision>]`, of the operations it logs
/// (its own and the peer's): `<ns> operation <node id> <sequence>`, and of one derived
/// change, the viewport's pans: `<ns> pan <viewport id> <panX>`.
///
/// Written with one `write(2)` per line, so the lines survive a SIGKILL (they are in
/// the kernel's page cache). The crash tests and `strata torture` read it to know which
/// changes were older than their tier's bound when the process was killed.
public final class CriticalTrace: CanvasObserver {
    /// One line of a trace.
    public struct Line: Sendable {
        public var instant: Instant
        public var operation: String
        public var subject: String
        public var number: Int64?

        public var isDerived: Bool { operation == "pan" }
    }

    /// The lines of the trace at `path` (none if it does not exist).
    public static func read(_ path: String) -> [Line] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        // The last line may be cut short by a kill: keep only complete lines.
        return text.split(separator: "\n").dropLast(text.hasSuffix("\n") ? 0 : 1).compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 3, let ns = Int64(fields[0]) else { return nil }
            return Line(instant: Instant(nanoseconds: ns), operation: String(fields[1]), subject: String(fields[2]),
                        number: fields.count > 3 ? Int64(fields[3]) : nil)
        }
    }

    private let fd: Int32
    private let clock = MonotonicClock()

    public init(path: String) throws {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    public func record(_ operation: CanvasChange, _ id: EntityID) {
        let now = clock.now().nanoseconds
        let line: String = switch operation {
        case .spawn: "\(now) spawn \(id)\n"
        case .despawn: "\(now) despawn \(id)\n"
        case .strokeEnd: "\(now) stroke_end \(id)\n"
        case .metadata(let revision): "\(now) metadata \(id) \(revision)\n"
        case .logged(let sequence): "\(now) operation \(id) \(sequence)\n"
        case .pan(let x): "\(now) pan \(id) \(x)\n"
        }
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) }
    }

    deinit { close(fd) }
}

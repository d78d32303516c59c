import Foundation
import Strata

/// An append-only log of the critical changes `strata sim` makes, one line each:
/// `<CLOCK_MONOTONIC ns> <op> <entity id> [<revision>]`, and of the operations it logs
/// (its own and the peer's): `<ns> operation <node id> <sequence>`.
///
/// Written with one `write(2)` per line, so the lines survive a SIGKILL (they are in
/// the kernel's page cache). The crash test reads it to know which critical changes
/// were older than the critical delay when the process was killed.
final class CriticalTrace {
    enum Operation {
        case spawn
        case despawn
        case strokeEnd
        case metadata(revision: Int)
        /// An operation logged (appended or received).
        case logged(sequence: Int64)
    }

    private let fd: Int32
    private let clock = MonotonicClock()

    init(path: String) throws {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    func record(_ operation: Operation, _ id: EntityID) {
        let now = clock.now().nanoseconds
        let line: String = switch operation {
        case .spawn: "\(now) spawn \(id)\n"
        case .despawn: "\(now) despawn \(id)\n"
        case .strokeEnd: "\(now) stroke_end \(id)\n"
        case .metadata(let revision): "\(now) metadata \(id) \(revision)\n"
        case .logged(let sequence): "\(now) operation \(id) \(sequence)\n"
        }
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress, $0.count) }
    }

    deinit { close(fd) }
}

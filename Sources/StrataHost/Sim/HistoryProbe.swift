import Foundation
import Strata

/// With `[history]`, the end of a `strata sim` run reads the world back at the window's start,
/// middle and end (``Engine/world(at:)``) and says how long each took: what a rewind costs here.
enum HistoryProbe {
    /// One summary line; nil without history.
    static func line(_ engine: Engine) -> String? {
        guard let window = try? engine.history() else { return nil }
        let span = window.endMilliseconds - window.startMilliseconds
        var reads: [String] = []
        for (label, at) in [("start", window.startMilliseconds), ("middle", window.startMilliseconds + span / 2),
                            ("end", window.endMilliseconds)] {
            let started = ContinuousClock.now
            guard let world = try? engine.world(at: Date(timeIntervalSince1970: Double(at) / 1000)) else { continue }
            let took = ContinuousClock.now - started
            reads.append(String(format: "%@ %.0f ms (%d entities)", label, Double(took.components.attoseconds) / 1e15
                                + Double(took.components.seconds) * 1000, world.entityCount))
        }
        return String(format: "  history      %d flushes over %.0f s, %@ kept; world(at:) ", window.flushes.count, Double(span) / 1000,
                      ByteCountFormatter.string(fromByteCount: Int64(window.bytes), countStyle: .binary))
            + reads.joined(separator: ", ")
    }
}

import Foundation
import Strata

/// Another replica editing the same canvas, as the network delivers it: its operations
/// arrive at random moments, some twice, some out of order (one held back and delivered
/// after the next), so the receiving side sees duplicates and gaps that close later.
///
/// Tick thread (inside ``CanvasScenario``).
struct SimulatedPeer {
    let node = NodeID()
    private var nextSeq: Int64 = 1
    private var heldBack: LoggedOperation?
    private var lastDelivered: LoggedOperation?

    /// The operations that arrive now for `count` new edits of the peer, in delivery order.
    mutating func deliver(_ count: Int, kind: String, using rng: inout SplitMix64) -> [LoggedOperation] {
        var made: [LoggedOperation] = []
        for _ in 0 ..< count {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            made.append(LoggedOperation(node: node, seq: nextSeq, timestamp: HybridTimestamp(milliseconds: now, counter: nextSeq & 0xFF),
                                        kind: kind, payload: Array("peer edit \(nextSeq)".utf8)))
            nextSeq += 1
        }
        var delivered: [LoggedOperation] = []
        if let held = heldBack {
            delivered = made + [held]   // the one held back arrives after later ones: a gap that closes
            heldBack = nil
        } else if made.count > 0 && rng.chance(0.2) {
            heldBack = made.removeLast()
            delivered = made
        } else {
            delivered = made
        }
        if let again = lastDelivered, rng.chance(0.2) { delivered.append(again) }   // a retransmission
        lastDelivered = delivered.last ?? lastDelivered
        return delivered
    }
}

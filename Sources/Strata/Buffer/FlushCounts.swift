/// The flushes handed to the writer, counted by ``WriteBuffer`` under its lock at
/// submission, so that a flush tick touches no metrics lock and no dictionary.
///
/// Read into ``PersistenceMetrics`` (`flushCount`, `flushesByReason`, `mergedBatches`,
/// `writerWakes`) when a snapshot is taken.
struct FlushCounts {
    var flushes = 0
    /// Submissions that merged into a batch still waiting for the writer.
    var merged = 0
    /// Submissions that had to wake a parked writer (a system call on the tick thread).
    var wakes = 0
    /// Indexed by bit position (``FlushReason/byBit``). Never shared with a snapshot,
    /// so counting never copies it.
    private var byReason = [Int](repeating: 0, count: FlushReason.byBit.count)

    mutating func record(_ reasons: FlushReasonSet, merged wasMerged: Bool) {
        flushes += 1
        if wasMerged { merged += 1 }
        for reason in reasons { byReason[reason.bit.trailingZeroBitCount] += 1 }
    }

    /// The counts of the reasons seen at least once (a fresh dictionary).
    var reasons: [FlushReason: Int] {
        var result: [FlushReason: Int] = [:]
        for (index, count) in byReason.enumerated() where count > 0 { result[FlushReason.byBit[index]] = count }
        return result
    }
}

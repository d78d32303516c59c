/// A cache hint for a slice of pulled operations. Tick thread.
///
/// A device joining a document applies thousands of values of entities it has never seen,
/// and each id's cell in the id index (`EntityIndex`) is at a random place in a table
/// larger than the cache holds alongside everything else the apply touches: a miss per
/// value, and the stall where a join's tick time went most (a sixth of it in the profile).
/// So while it applies operation `i`, the loop asks for the id cell of operation `i + d`.
/// The hint changes nothing: an operation that is not a replicated value wastes one.
/// (Asking for the payloads too, twice as far ahead, measured no better.)
extension World {
    /// How many operations ahead the id cells are asked for.
    static let prefetchDistance = 8

    @inline(__always)
    func prefetch(ahead operations: borrowing [LoggedOperation], of index: Int) {
        guard index + Self.prefetchDistance < operations.count else { return }
        // Through the buffer, so that the payload is borrowed: a copy of it would be retained,
        // a write to an object the sync thread made (its cache line taken from that core).
        operations.withUnsafeBufferPointer { operations in
            operations[index + Self.prefetchDistance].payload.withUnsafeBytes { bytes in
                guard bytes.count >= 17 else { return }   // a format byte, then the entity's id
                prefetchIndexCell((bytes.loadUnaligned(fromByteOffset: 1, as: UInt64.self),
                                   bytes.loadUnaligned(fromByteOffset: 9, as: UInt64.self)))
            }
        }
    }
}

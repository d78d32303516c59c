/// What became of rows the engine tried to park in the side file (`PATH.rejected`):
/// how many are there, how many are lost and why. Messages about them are made from it.
struct ParkOutcome: Sendable, Equatable {
    var parked: Int
    var lost: Int
    var path: String
    /// Why the side file did not take them all.
    var failure: String?

    /// "parked in PATH", "LOST (…)", or both, as it happened.
    var summary: String {
        switch (parked, lost) {
        case (_, 0): return "parked in \(path)"
        case (0, _): return "\(lost) LOST (\(failure ?? "the side file could not be written"))"
        default: return "\(parked) parked in \(path), \(lost) LOST (\(failure ?? "the side file could not be written"))"
        }
    }
}

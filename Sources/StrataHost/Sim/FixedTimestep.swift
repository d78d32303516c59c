import Strata

/// The accumulator of "Fix Your Timestep": how many fixed ticks a frame owes.
///
/// Pure state: feed it the frame's elapsed time, get the number of ticks to run. After
/// a stall, at most `maxCatchUp` ticks run in one frame and the rest of the debt is
/// dropped (counted), so a slow tick cannot snowball into ever longer frames.
struct FixedTimestep {
    let tick: Duration
    let maxCatchUp: Int
    private(set) var accumulator: Duration = .zero
    private(set) var droppedTicks = 0

    init(hz: Int, maxCatchUp: Int) {
        tick = .nanoseconds(1_000_000_000 / Int64(hz))
        self.maxCatchUp = maxCatchUp
    }

    /// Adds the frame's elapsed time and returns the ticks to run now.
    mutating func advance(by elapsed: Duration) -> Int {
        accumulator += elapsed
        var steps = 0
        while accumulator >= tick && steps < maxCatchUp {
            accumulator -= tick
            steps += 1
        }
        if accumulator >= tick {
            droppedTicks += Int(accumulator / tick)
            accumulator = .zero
        }
        return steps
    }

    /// Time until the next tick is owed.
    var untilNextTick: Duration { tick - accumulator }
}

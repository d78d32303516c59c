/// A power state and where it came from.
public struct PowerReading: Sendable, Equatable {
    /// Where the values came from.
    public enum Source: Sendable, Equatable {
        /// UPower answered (its daemon version).
        case upower(daemonVersion: String)
        /// `power_source = "fallback"`: the configured fallback, by choice.
        case fallback
        /// UPower was wanted but did not answer: the configured fallback, and why.
        case unavailable(reason: String)

        /// `upower`, `fallback` or `error` (the `source` of `strata power --json`).
        public var name: String {
            switch self {
            case .upower: "upower"
            case .fallback: "fallback"
            case .unavailable: "error"
            }
        }
    }

    public var source: Source
    public var state: PowerState

    public init(source: Source, state: PowerState) {
        self.source = source
        self.state = state
    }
}

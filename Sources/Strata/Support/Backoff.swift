/// How long to wait before trying again after failed attempts in a row: doubling from
/// `initial` up to `longest`. The one formula of the writer's retries, the corrupt file's
/// replacement, the jobs' runs and the sync client's calls and pushes, each with the two
/// durations of its own config section (`retry_initial_backoff_ms`, `retry_max_backoff_ms`).
struct Backoff: Equatable, Sendable {
    var initial: Duration
    var longest: Duration

    /// The wait after `failures` failed attempts in a row: none before the first failure,
    /// `initial` after it, twice as long after each next one, never more than `longest`
    /// (and no overflow, however many).
    func wait(after failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        return min(initial * (1 << min(failures - 1, 30)), longest)
    }
}

extension WriterConfig {
    /// The writer's retries, and the corrupt file's replacement.
    var backoff: Backoff { Backoff(initial: retryInitialBackoff, longest: retryMaxBackoff) }
}

extension JobsConfig {
    var backoff: Backoff { Backoff(initial: retryInitialBackoff, longest: retryMaxBackoff) }
}

extension SyncConfig {
    var backoff: Backoff { Backoff(initial: retryInitialBackoff, longest: retryMaxBackoff) }
}

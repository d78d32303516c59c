import Foundation

/// Records the thread that owns a mutable object and checks it in debug builds.
///
/// Modelled on GRDB's `SchedulingWatchdog`: using a tick-thread object from another
/// thread is a programming error, caught at the call site rather than as a data race.
/// Ownership is taken by the first checked call, so an object may be built on one
/// thread and handed to its owner before first use.
@usableFromInline
struct ThreadOwner {
    #if DEBUG
    @usableFromInline var owner: pthread_t?
    #endif

    @usableFromInline init() {}

    @inlinable @inline(__always)
    mutating func check(_ what: @autoclosure () -> String, file: StaticString = #file, line: UInt = #line) {
        #if DEBUG
        let me = pthread_self()
        if let owner {
            precondition(pthread_equal(owner, me) != 0,
                         "\(what()) used off its owning thread", file: file, line: line)
        } else {
            owner = me
        }
        #endif
    }

    /// Hands the object to another thread: the next checked call takes ownership.
    mutating func release() {
        #if DEBUG
        owner = nil
        #endif
    }
}

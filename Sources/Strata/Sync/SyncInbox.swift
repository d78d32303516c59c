import Foundation
import Synchronization

/// What the sync brings to the tick thread: operations pulled from the server, and the
/// server's acknowledgement of this replica's operations. Filled by `SyncClient`'s
/// thread, taken by ``Engine/endTick()`` (which reads one atomic when there is nothing).
@usableFromInline
final class SyncInbox: @unchecked Sendable {
    // @unchecked Sendable: `operations` and `acknowledged` are guarded by `lock`;
    // `changes` is atomic.
    private let lock = Lock()
    private var operations: [LoggedOperation] = []
    /// Operations before this index were taken already (a large pull is taken in slices:
    /// removing each slice from the front would move the rest every time).
    private var head = 0
    private var acknowledged: Int64?
    @usableFromInline let changes = Atomic<Int>(0)

    /// Operations waiting for the tick thread (the client pulls no more past a limit).
    var backlog: Int { lock.withLock { operations.count - head } }

    func deliver(_ pulled: consuming [LoggedOperation]) {
        guard !pulled.isEmpty else { return }
        for index in pulled.indices { ReplicatedOperation.canonicalize(&pulled[index].kind) }
        lock.withLock {
            if head > 0 && head >= operations.count / 2 {   // drop what was taken, now and then
                operations.removeFirst(head)
                head = 0
            }
            operations += pulled
        }
        changes.wrappingAdd(1, ordering: .releasing)
    }

    /// The server has every operation of this replica through `sequence`.
    func acknowledge(through sequence: Int64) {
        lock.withLock { acknowledged = max(acknowledged ?? 0, sequence) }
        changes.wrappingAdd(1, ordering: .releasing)
    }

    /// The most operations one end of tick takes: a device joining a large document
    /// applies it over several ticks, none of them long.
    static let perTick = 2_000

    /// Takes at most `limit` operations and the acknowledgement; `more`: operations are left.
    func take(limit: Int = perTick) -> (operations: [LoggedOperation], acknowledged: Int64?, more: Bool) {
        lock.withLock {
            defer { acknowledged = nil }
            guard operations.count - head > limit else {
                defer { operations = []; head = 0 }
                return (head == 0 ? operations : Array(operations[head...]), acknowledged, false)
            }
            // Moved out, not copied: what the tick thread has applied is freed slice by slice,
            // not all at once when the pull is used up.
            var taken: [LoggedOperation] = []
            taken.reserveCapacity(limit)
            for index in head ..< head + limit { taken.append(operations.moveOut(at: index)) }
            head += limit
            return (taken, acknowledged, true)
        }
    }
}

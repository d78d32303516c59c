import Foundation
import StrataPQ

/// The instance's PostgreSQL connections for requests: a handful (`[database] pool_size`),
/// whatever the number of devices. Each connection has a serial queue of its own, where
/// its blocking libpq calls run; a request borrows one for one call and gives it back. A
/// connection that broke is made again by the next call that borrows it.
final class DatabasePool: @unchecked Sendable {
    // @unchecked Sendable: `idle`, `waiting`, `inUse` are only touched under `lock`; a
    // slot's connection only on its own queue.
    private final class Slot: @unchecked Sendable {
        let queue: DispatchQueue
        var connection: PGConnection?

        init(index: Int) { queue = DispatchQueue(label: "strata.server.db.\(index)") }
    }

    let url: String
    let timeout: Duration
    let size: Int
    private let lock = NSLock()
    private var idle: [Slot]
    private var waiting: [CheckedContinuation<Slot, Never>] = []
    private var borrowed = 0

    /// Connections lent out now.
    var inUse: Int { lock.withLock { borrowed } }

    init(url: String, size: Int, timeout: Duration) {
        self.url = url
        self.size = size
        self.timeout = timeout
        idle = (0 ..< size).map(Slot.init)
    }

    /// Runs `body` on a connection of the pool (connecting it first if needed).
    func run<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let slot = await borrow()
        defer { giveBack(slot) }
        let (url, timeout) = (url, timeout)
        return try await withCheckedThrowingContinuation { continuation in
            slot.queue.async {
                do {
                    if slot.connection?.isOpen != true {
                        slot.connection = nil
                        slot.connection = try PGConnection(conninfo: url, timeout: timeout)
                    }
                    guard let connection = slot.connection else { throw PGConnectionError(.unreachable, "not connected") }
                    let result = try body(connection)
                    continuation.resume(returning: result)
                } catch {
                    if slot.connection?.isOpen != true { slot.connection = nil }
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Runs `body` inside one transaction (rolled back if it throws).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await run { connection in
            try connection.query("BEGIN")
            do {
                let result = try body(connection)
                try connection.query("COMMIT")
                return result
            } catch {
                _ = try? connection.query("ROLLBACK")
                throw error
            }
        }
    }

    private func borrow() async -> Slot {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let slot = idle.popLast() {
                borrowed += 1
                lock.unlock()
                continuation.resume(returning: slot)
            } else {
                waiting.append(continuation)
                lock.unlock()
            }
        }
    }

    private func giveBack(_ slot: Slot) {
        lock.lock()
        if waiting.isEmpty {
            idle.append(slot)
            borrowed -= 1
            lock.unlock()
        } else {
            let next = waiting.removeFirst()
            lock.unlock()
            next.resume(returning: slot)
        }
    }

    /// Closes every idle connection (at shutdown).
    func close() {
        lock.lock()
        let slots = idle
        lock.unlock()
        for slot in slots { slot.queue.sync { slot.connection?.close(); slot.connection = nil } }
    }
}

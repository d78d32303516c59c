import CStrataCrypto
import Foundation
import NIOCore
import StrataWire

/// The live pulls waiting on this instance, by document, and the news that wakes them:
/// a push through this instance, or the change feed (a push through any instance).
///
/// A pull takes the document's generation before it queries, and waits only if the
/// generation has not moved since: news between the query and the wait is never missed.
/// The pulls woken together share one ``Delivery``: one query for all of them, from the
/// oldest position any of them had, each taking its own page from it. One timer thread
/// ends the waits that run out (no task per waiting pull).
final class DocumentWaiters: @unchecked Sendable {
    // @unchecked Sendable: everything is under `lock`.
    private struct Waiter {
        var continuation: CheckedContinuation<Delivery?, Never>
        var deadline: Double
        var document: String
        var after: Int64
    }

    private let lock = NSLock()
    private var generations: [String: UInt64] = [:]
    private var waiting: [String: [UInt64: Waiter]] = [:]
    private var nextID: UInt64 = 0
    private var waitingCount = 0
    private var sweeping = false

    /// A document's key: the md5 of its name in hex, as the feed's notifications carry it.
    static func key(of document: String) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let bytes = Array(document.utf8)
        guard EVP_Digest(bytes, bytes.count, &digest, &length, EVP_md5(), nil) == 1 else { return document }
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(Int(length) * 2)
        for byte in digest.prefix(Int(length)) { text += [hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]] }
        return String(decoding: text, as: UTF8.self)
    }

    static func now() -> Double { ProcessInfo.processInfo.systemUptime }

    /// The newest position of each document the feed told of since it (re)connected: a
    /// pull already past it has nothing to query.
    private var newest: [String: Int64] = [:]

    /// The pulls waiting now.
    var count: Int { lock.withLock { waitingCount } }

    /// The document's generation, and its newest position if the feed told it.
    func state(of key: String) -> (generation: UInt64, newest: Int64?) {
        lock.withLock { (generations[key] ?? 0, newest[key]) }
    }

    /// Waits for news on `document` after `generation`, up to `timeout`: the delivery the
    /// pulls woken with this one share, or nil (the time ran out, or the feed was lost).
    func wait(for document: String, key: String, after generation: UInt64, from position: Int64, timeout: Duration) async -> Delivery? {
        let deadline = Self.now() + Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        return await withCheckedContinuation { (continuation: CheckedContinuation<Delivery?, Never>) in
            let registered: Bool = lock.withLock {
                guard (generations[key] ?? 0) == generation else { return false }
                nextID += 1
                waiting[key, default: [:]][nextID] = Waiter(continuation: continuation, deadline: deadline, document: document, after: position)
                waitingCount += 1
                if !sweeping {
                    sweeping = true
                    Thread.detachNewThread { [weak self] in self?.sweep() }
                }
                return true
            }
            // News came between the query and now: query again at once.
            if !registered { continuation.resume(returning: nil) }
        }
    }

    /// News for `key`: every pull waiting on it answers, from one shared query.
    /// `newest`: the document's newest position, from the feed (nil from a push here,
    /// which the feed tells of too).
    func wake(_ key: String, newest position: Int64? = nil) {
        let (woken, delivery): ([CheckedContinuation<Delivery?, Never>], Delivery?) = lock.withLock {
            if let position {
                // Told already (this instance's push woke it first): nothing new.
                if let known = newest[key], known >= position { return ([], nil) }
                newest[key] = position
            }
            generations[key, default: 0] += 1
            guard let all = waiting.removeValue(forKey: key), let any = all.first?.value else { return ([], nil) }
            waitingCount -= all.count
            let delivery = Delivery(document: any.document, after: all.values.map(\.after).min() ?? 0, generation: generations[key] ?? 0)
            return (all.values.map(\.continuation), delivery)
        }
        for continuation in woken { continuation.resume(returning: delivery) }
    }

    /// News for every document (the feed was lost: what was pushed meanwhile is unknown).
    func wakeAll() {
        let woken: [CheckedContinuation<Delivery?, Never>] = lock.withLock {
            for key in waiting.keys { generations[key, default: 0] += 1 }
            for key in generations.keys { generations[key, default: 0] += 1 }
            newest.removeAll()   // what was pushed meanwhile is unknown
            let all = waiting.values.flatMap { $0.values.map(\.continuation) }
            waiting.removeAll()
            waitingCount = 0
            return all
        }
        for continuation in woken { continuation.resume(returning: nil) }
    }

    /// Every 100 ms, ends the waits whose time ran out; stops when none is left.
    private func sweep() {
        while true {
            Thread.sleep(forTimeInterval: 0.1)
            let now = Self.now()
            let (expired, more): ([CheckedContinuation<Delivery?, Never>], Bool) = lock.withLock {
                var expired: [CheckedContinuation<Delivery?, Never>] = []
                for key in Array(waiting.keys) {
                    guard var waiters = waiting[key] else { continue }
                    for (id, waiter) in waiters where waiter.deadline <= now {
                        expired.append(waiter.continuation)
                        waiters.removeValue(forKey: id)
                    }
                    waiting[key] = waiters.isEmpty ? nil : waiters
                }
                waitingCount -= expired.count
                if waiting.isEmpty { sweeping = false }
                return (expired, !waiting.isEmpty)
            }
            for continuation in expired { continuation.resume(returning: nil) }
            if !more { return }
        }
    }
}

/// The pulls of one document woken together: one query (the first that asks runs it, the
/// others wait for it) for the operations after the oldest position any of them had, and
/// one encoding of each page they take.
final class Delivery: @unchecked Sendable {
    // @unchecked Sendable: `task` and `encodings` are under `lock`.
    let document: String
    let after: Int64
    /// The document's generation it was made at: its query sees every push up to it, and
    /// a pull that found nothing in it waits for news after it.
    let generation: UInt64
    private let lock = NSLock()
    private var task: Task<SharedRows, any Error>?

    init(document: String, after: Int64, generation: UInt64) {
        self.document = document
        self.after = after
        self.generation = generation
    }

    /// The pages encoded so far, by what they took.
    private var encodings: [Taken: ByteBuffer] = [:]
    private struct Taken: Hashable {
        var positions: [Int64]
        var cursor: Int64
        var hasMore: Bool
    }

    /// `page` as JSON, encoded once for all the pulls of this delivery that take the same
    /// operations (`positions`).
    func encoded(_ page: SyncWire.PullResponse, taking positions: [Int64]) throws -> ByteBuffer {
        let taken = Taken(positions: positions, cursor: page.cursor, hasMore: page.hasMore)
        if let known = lock.withLock({ encodings[taken] }) { return known }
        let bytes = ByteBuffer(bytes: try JSONEncoder().encode(page))
        lock.withLock { encodings[taken] = bytes }
        return bytes
    }

    func rows(_ fetch: @escaping @Sendable (String, Int64) async throws -> SharedRows) async throws -> SharedRows {
        let running: Task<SharedRows, any Error> = lock.withLock {
            if let task { return task }
            let (document, after) = (document, after)
            let made = Task { try await fetch(document, after) }
            task = made
            return made
        }
        return try await running.value
    }
}

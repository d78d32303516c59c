import Foundation
import Hummingbird
import NIOCore
import NIOPosix
import StrataWire

/// Push and pull: the bodies read within the limits, checked whole, then one query.
extension SyncService {
    func push(_ request: Request, document: String, subject: String) async throws -> SyncWire.PushResponse {
        let push: SyncWire.PushRequest = try await decode(request)
        guard push.operations.count <= config.maxOperationsPerPush else {
            throw Refusal.tooLarge("\(push.operations.count) operations in one push; at most \(config.maxOperationsPerPush)")
        }
        for (index, operation) in push.operations.enumerated() {
            guard operation.payload.count <= config.maxPayloadBytes else {
                throw Refusal.tooLarge("operation \(index): a payload of \(operation.payload.count) bytes; at most \(config.maxPayloadBytes)")
            }
            guard operation.seq > 0, operation.seq <= 1 << 62 else { throw Refusal.malformed("operation \(index): seq \(operation.seq) is out of range") }
            guard !operation.kind.isEmpty, operation.kind.utf8.count <= 200, !operation.kind.utf8.contains(0) else {
                throw Refusal.malformed("operation \(index): a kind is 1 to 200 bytes, without NUL")
            }
        }
        guard !push.operations.isEmpty else { return SyncWire.PushResponse(inserted: 0, duplicates: 0) }
        let inserted: Int
        do {
            inserted = try await store.push(push.operations, document: document, subject: subject)
        } catch {
            throw databaseRefusal(error)
        }
        metrics.pushedOperations.increment(by: Int64(inserted))
        metrics.duplicateOperations.increment(by: Int64(push.operations.count - inserted))
        // Pulls waiting here answer now; other instances hear it through the feed.
        if inserted > 0 { waiters.wake(DocumentWaiters.key(of: document)) }
        return SyncWire.PushResponse(inserted: inserted, duplicates: push.operations.count - inserted)
    }

    /// The answer to a pull, as JSON: the pulls woken together that take the same page
    /// share its encoding.
    func pull(_ request: Request, document: String) async throws -> ByteBuffer {
        let pull: SyncWire.PullRequest = try await decode(request)
        var clock: [UUID: Int64] = [:]
        for (node, seq) in pull.clock {
            guard let id = UUID(uuidString: node) else { throw Refusal.malformed("clock: \"\(node.prefix(64))\" is not a node id") }
            clock[id] = max(clock[id] ?? 0, seq)
        }
        guard pull.after >= 0, pull.limit >= 0, pull.waitMilliseconds >= 0 else {
            throw Refusal.malformed("after, limit and wait_ms must not be negative")
        }
        let limit = min(pull.limit, config.maxPullLimit)
        let key = DocumentWaiters.key(of: document)
        let wait = min(Duration.milliseconds(pull.waitMilliseconds), config.maxPullWait)
        let deadline = ContinuousClock.now + wait
        var delivery: Delivery?
        while true {
            let (current, newest) = waiters.state(of: key)
            let generation = delivery?.generation ?? current
            // Up to date with what the feed told: wait without a query.
            if delivery == nil, let newest, newest <= pull.after, deadline > ContinuousClock.now, !Task.isCancelled {
                delivery = await waiters.wait(for: document, key: key, after: generation, from: pull.after, timeout: deadline - ContinuousClock.now)
                if delivery == nil, ContinuousClock.now < deadline { continue }
            }
            let answer: SyncWire.PullResponse
            var shared: (delivery: Delivery, positions: [Int64])?
            do {
                // Woken with others: their shared query, unless it may not hold this page.
                if let delivery, let (page, positions) = try await delivery.rows({ [store, config] document, after in
                    try await store.rows(of: document, after: after, limit: config.maxPullLimit)
                }).page(for: pull, clock: clock, limit: limit) {
                    answer = page
                    shared = (delivery, positions)
                } else {
                    answer = try await store.pull(pull, clock: Array(clock.map { ($0.key, $0.value) }), limit: limit, document: document)
                }
            } catch {
                throw databaseRefusal(error)
            }
            let left = deadline - ContinuousClock.now
            if answer.hasMore || !answer.operations.isEmpty || left <= .zero || Task.isCancelled {
                metrics.pulledOperations.increment(by: Int64(answer.operations.count))
                if let (delivery, positions) = shared { return try delivery.encoded(answer, taking: positions) }
                return ByteBuffer(bytes: try JSONEncoder().encode(answer))
            }
            delivery = await waiters.wait(for: document, key: key, after: generation, from: pull.after, timeout: left)
        }
    }

    /// The body as `T`: at most `max_body_bytes` (413), within the request timeout (408:
    /// a client that sends slowly does not hold the connection), readable JSON (422).
    ///
    /// The body is read by a task of its own, which a timer on an event loop cancels when
    /// the time runs out; the timer goes as soon as the body is in (a `Task.sleep` raced
    /// against the read would keep its timer until it ran out, one per request).
    func decode<T: Decodable & Sendable>(_ request: Request) async throws -> T {
        let (limit, timeout, body) = (config.maxBodyBytes, config.requestTimeout, request.body)
        let reading = Task { try await body.collect(upTo: limit) }
        let timer = MultiThreadedEventLoopGroup.singleton.any()
            .scheduleTask(in: .nanoseconds(Int64(timeout / .nanoseconds(1)))) { reading.cancel() }
        defer { timer.cancel() }
        let buffer: ByteBuffer
        do {
            buffer = try await withTaskCancellationHandler { try await reading.value } onCancel: { reading.cancel() }
        } catch is NIOTooManyBytesError {
            throw Refusal.tooLarge("the body is larger than \(limit) bytes")
        } catch where reading.isCancelled && !Task.isCancelled {
            throw Refusal(status: .requestTimeout, code: "timeout", message: "the body did not arrive within \(timeout.components.seconds) s")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer: buffer))
        } catch {
            throw Refusal.malformed("the body does not read as this route's JSON: \(Self.brief(error))")
        }
    }

    static func brief(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        case DecodingError.dataCorrupted(let context): context.debugDescription
        default: "\(error)"
        }
    }
}

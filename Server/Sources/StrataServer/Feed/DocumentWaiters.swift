import CStrataCrypto
import Foundation

/// The live pulls waiting on this instance, by document, and the news that wakes them:
/// a push through this instance, or the change feed (a push through any instance).
///
/// A pull takes the document's generation before it queries, and waits only if the
/// generation has not moved since: news between the query and the wait is never missed.
final class DocumentWaiters: @unchecked Sendable {
    // @unchecked Sendable: everything is under `lock`.
    private let lock = NSLock()
    private var generations: [String: UInt64] = [:]
    private var waiting: [String: [UInt64: CheckedContinuation<Void, Never>]] = [:]
    private var nextID: UInt64 = 0
    private(set) var count = 0

    /// A document's key: the md5 of its name in hex, as the feed's notifications carry it.
    static func key(of document: String) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let bytes = Array(document.utf8)
        guard EVP_Digest(bytes, bytes.count, &digest, &length, EVP_md5(), nil) == 1 else { return document }
        return digest.prefix(Int(length)).map { String(format: "%02x", $0) }.joined()
    }

    func generation(of key: String) -> UInt64 {
        lock.withLock { generations[key] ?? 0 }
    }

    /// Returns when `key` has news after `generation`, or after `timeout`.
    func wait(for key: String, after generation: UInt64, timeout: Duration) async {
        let id: UInt64? = lock.withLock {
            guard (generations[key] ?? 0) == generation else { return nil }
            nextID += 1
            return nextID
        }
        guard let id else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let registered: Bool = lock.withLock {
                guard (generations[key] ?? 0) == generation else { return false }
                waiting[key, default: [:]][id] = continuation
                count += 1
                return true
            }
            guard registered else { continuation.resume(); return }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.resume(key, id)
            }
        }
    }

    /// News for `key`: every pull waiting on it answers.
    func wake(_ key: String) {
        let woken: [CheckedContinuation<Void, Never>] = lock.withLock {
            generations[key, default: 0] += 1
            let all = waiting.removeValue(forKey: key).map { Array($0.values) } ?? []
            count -= all.count
            return all
        }
        for continuation in woken { continuation.resume() }
    }

    /// News for every document (the feed was lost: what was pushed meanwhile is unknown).
    func wakeAll() {
        let woken: [CheckedContinuation<Void, Never>] = lock.withLock {
            for key in generations.keys { generations[key, default: 0] += 1 }
            for key in waiting.keys { generations[key, default: 0] += 1 }
            let all = waiting.values.flatMap(\.values)
            waiting.removeAll()
            count = 0
            return all
        }
        for continuation in woken { continuation.resume() }
    }

    private func resume(_ key: String, _ id: UInt64) {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            guard let found = waiting[key]?.removeValue(forKey: id) else { return nil }
            if waiting[key]?.isEmpty == true { waiting.removeValue(forKey: key) }
            count -= 1
            return found
        }
        continuation?.resume()
    }
}

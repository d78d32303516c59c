import Foundation
import GRDB

/// The request lane: work other threads hand the writer (``WriterRequest``), beside the
/// tick thread's batches. Writer thread.
extension Writer {
    /// Runs `requests` in ONE transaction, committed with the strictest durability any asks
    /// for; then tells each how it went. They run first without savepoints (two statements
    /// a request saved); if one fails or waits, the transaction is rolled back and they run
    /// again, each in a savepoint of its own, so that it rolls back alone. Requests that
    /// wait for a batch are kept for the next one. If the transaction fails for a reason a
    /// retry can fix (a full disk, an I/O error), they go back to the hand-off and this
    /// returns false: the caller backs off, as for a batch. On a corrupt file they go back
    /// too, for the writer of the file that replaces it.
    @discardableResult
    func serve(_ requests: [WriterRequest]) -> Bool {
        guard !requests.isEmpty else { return true }
        var errors = [Error?](repeating: nil, count: requests.count)
        var waiting = [Bool](repeating: false, count: requests.count)
        do {
            try store.withConnection { db in
                // FULL if any request of the group asks for it: one WAL sync covers them all.
                try db.committing(requests.map(\.durability).max() ?? .normal) {
                    var isolate = false
                    try db.inTransaction(.immediate) {
                        do {
                            for request in requests where try request.body(db) == .waitForBatch {
                                isolate = true
                                return .rollback
                            }
                            return .commit
                        } catch {
                            // The machine's trouble (busy, full, I/O, corrupt): the whole group's.
                            if Self.isMachineTrouble(error) { throw error }
                            isolate = true   // one request's own failure (a constraint, a bad call): find which
                            return .rollback
                        }
                    }
                    guard isolate else { return }
                    try db.inTransaction(.immediate) {
                        for (i, request) in requests.enumerated() {
                            do {
                                try db.inSavepoint {
                                    waiting[i] = try request.body(db) == .waitForBatch
                                    return waiting[i] ? .rollback : .commit
                                }
                            } catch {
                                errors[i] = error
                            }
                        }
                        return .commit
                    }
                }
            }
        } catch {
            let storeError = StoreError(.write, wrapping: error, path: store.location.path)
            metrics.update {
                $0.failedCommits += 1
                $0.lastWriteError = storeError.description
            }
            if reportIfCorrupt(storeError) {
                buffer.putBack(requests)
                return true
            }
            if Self.isTransient(storeError) && !buffer.isClosing {
                logger.warning("writer: \(requests.count) requests failed (attempt \(schedule.failures + 1)), will retry: \(storeError)")
                buffer.putBack(requests)
                return false
            }
            for i in requests.indices where errors[i] == nil && !waiting[i] { errors[i] = storeError }
        }
        schedule.succeeded()
        metrics.update { $0.writerRequests += requests.count }
        for (i, request) in requests.enumerated() {
            if waiting[i] {
                if request.patienceLeft > .zero { deferredRequests.append(request) } else { request.finish(WriterRequestError.timedOut) }
            } else {
                request.finish(errors[i])
            }
        }
        return true
    }

    /// After a batch commits: the requests that waited for one run again.
    func serveDeferredRequests() {
        guard !deferredRequests.isEmpty else { return }
        let again = deferredRequests
        deferredRequests.removeAll()
        serve(again)   // put back on a failure: the loop takes them again
    }

    /// Requests that waited for a batch past their deadline fail (the batch never came).
    func expireDeferredRequests() {
        guard deferredRequests.contains(where: { $0.patienceLeft == .zero }) else { return }
        for request in deferredRequests where request.patienceLeft == .zero { request.finish(WriterRequestError.timedOut) }
        deferredRequests.removeAll { $0.patienceLeft == .zero }
    }

    /// As the writer finishes: nothing more will run.
    func failRemainingRequests() {
        for request in deferredRequests + buffer.takeRequests() { request.finish(WriterRequestError.closed) }
        deferredRequests.removeAll()
    }
}

import Foundation
import Logging
import Synchronization

/// The pull side of the loop (``SyncClient``'s thread): pages that grow while full, and the
/// server's news (``SyncTransport/startListening(_:)``), which only marks a pull due.
extension SyncClient {
    /// Asks the transport to listen for the server's news, once, after the first connect
    /// (`listen`). Its events only wake this thread.
    func startListeningOnce() {
        guard config.listen, !listenerStarted else { return }
        listenerStarted = true
        let started = (try? call(toServer: false) { [self] in
            await self.transport.startListening { [weak self] event in self?.heard(event) }
        }) ?? false
        if !started { logger.info("sync: this transport cannot listen; pulling every \(Int(config.pullInterval.milliseconds)) ms") }
    }

    /// From the listener's thread.
    func heard(_ event: ListenEvent) {
        switch event {
        case .listening:
            listening.store(true, ordering: .releasing)
            update { $0.listening = true }
            logger.debug("sync: listening for the server's news")
        case .changed:
            update { $0.notifications += 1 }
        case .lost(let reason):
            listening.store(false, ordering: .releasing)
            update { $0.listening = false }
            logger.info("sync: not listening (\(reason)); pulling every \(Int(config.pullInterval.milliseconds)) ms until it is back")
            signalWaker()
            return
        }
        pullDue.store(true, ordering: .releasing)
        signalWaker()
    }

    /// Pulls pages until the server has no more (true), or the tick thread has not taken
    /// enough of the last ones yet (false: the rest stays on the server until then).
    func pullAll(told: Bool) throws -> Bool {
        var more = true
        var first = true
        while more && !shouldStop {
            guard inbox.backlog < config.joinBatchSize * 2 else { return false }
            let page = try call { [startClock, node, pullCursor, pageSize] in
                try await self.transport.pull(excluding: node, clock: startClock, after: pullCursor, limit: pageSize)
            }
            inbox.deliver(page.operations)
            pullCursor = max(pullCursor, page.cursor)
            more = page.hasMore
            update {
                $0.pulls += 1
                if first && told { $0.notifiedPulls += 1 }
                $0.pulledOperations += page.operations.count
                // Catching up from the first full page to the first short one, included.
                if more && !$0.catchingUp { $0.catchingUp = true; $0.catchUpPulled = 0 }
                if $0.catchingUp { $0.catchUpPulled += page.operations.count }
                if !more { $0.catchingUp = false }
            }
            first = false
            // A full page: the next one twice as large (a joining device's round trips
            // fall fast); back to the small page once caught up.
            pageSize = more ? min(pageSize * 2, config.joinBatchSize) : config.pullBatchSize
        }
        try outbox.notePull(now: wallClock())
        return !more
    }
}

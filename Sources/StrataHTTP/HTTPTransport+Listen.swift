import Foundation
import Strata
import StrataWire

/// Listening without a database connection: a long-poll. One request at a time asks the
/// service for news after the newest position this device has seen (`limit` 0: no
/// operation comes back, only whether one exists); the service holds it until another
/// device pushes to the document, or `listenWait` passes. News wakes the sync client,
/// which pulls by position as always.
extension HTTPTransport {
    public func startListening(_ changed: @escaping @Sendable (ListenEvent) -> Void) async -> Bool {
        guard listener == nil else { return true }
        listener = Task { await self.listen(changed) }
        return true
    }

    public func stopListening() async {
        listener?.cancel()
        await listener?.value
        listener = nil
    }

    private func listen(_ changed: @escaping @Sendable (ListenEvent) -> Void) async {
        var backoff: Duration = .milliseconds(250)
        var told = false
        while !Task.isCancelled {
            do {
                _ = try await connect()
                if !told {
                    changed(.listening)
                    told = true
                }
                // Own pushes are no news: the service leaves this device's node out (known
                // from its first pull; until then, any push is news, which costs one pull).
                let request = SyncWire.PullRequest(exclude: deviceNode ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), clock: [:], after: newestSeen, limit: 0,
                                                   waitMilliseconds: Int(listenWait.seconds * 1000))
                let answer: SyncWire.PullResponse = try await call("POST", "pull", body: request, extraWait: listenWait)
                backoff = .milliseconds(250)
                if answer.hasMore && answer.cursor > newestSeen {
                    newestSeen = answer.cursor
                    changed(.changed)
                }
            } catch {
                if Task.isCancelled { break }
                changed(.lost("\(error)"))
                told = false
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(30))
            }
        }
    }
}

import Foundation
import Synchronization

/// Backups of the running document (`Sources/Strata/Backup`): the writer copies the
/// pages in bounded steps between batches; the tick thread only asks. Tick thread.
///
/// ```swift
/// engine.startBackup(to: "/saves/before-boss.db") { result in
///     print((try? result.get())?.description ?? "backup failed")   // a thread of the backup's
/// }
/// let report = try engine.backup(to: "/saves/quit.db")           // flushes, waits (a tool, a quit)
/// ```
extension Engine {
    /// Starts a backup of the document to `path` and returns at once. The writer copies it
    /// step by step between batches (each about `[backup] step_budget_ms`); what it commits
    /// until the last step is in the copy. `completion` is called once, on another thread,
    /// with the report when the copy is verified and named, or with the error (the source is
    /// never touched, and nothing is left under `path`).
    ///
    /// - Throws: at once, if `path` cannot be a backup of this document: the document itself
    ///   or one of its files, a name that exists (a backup never replaces a file), a folder
    ///   that cannot be made; or the engine is shut down.
    public func startBackup(to path: String, completion: @escaping @Sendable (Result<BackupReport, any Error>) -> Void) throws {
        try startBackup(BackupRequest(target: BackupTarget(source: store.location, destination: path), completion: completion))
    }

    func startBackup(_ request: BackupRequest) throws {
        owner.check("Engine")
        guard !isShutDown, writer.backups.requests.add(request) else {
            throw StoreError(.write, message: "the engine is shut down", path: request.target.final.path)
        }
        buffer.nudge()
    }

    /// Flushes every tier, backs the document up to `path` and waits until the copy is
    /// verified and named: the backup holds the world as it is now. Blocks the calling
    /// (tick) thread for the whole copy: for tools and a quit; a running game uses
    /// ``startBackup(to:completion:)``.
    ///
    /// - Throws: as ``startBackup(to:completion:)``; the copy's or the check's error; or a
    ///   timeout (the backup goes on, and is named when it is verified).
    @discardableResult
    public func backup(to path: String, timeout: Duration = .seconds(3600)) throws -> BackupReport {
        let target = try BackupTarget(source: store.location, destination: path)
        guard flushNow(reason: .explicitSave, timeout: timeout) else {
            throw StoreError(.write, message: "the flush before the backup did not commit in \(timeout)", path: path)
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<BackupReport, any Error>?>(nil)
        try startBackup(BackupRequest(target: target) { result in
            outcome.withLock { $0 = result }
            done.signal()
        })
        guard done.wait(timeout: .now() + timeout.seconds) == .success, let result = outcome.withLock({ $0 }) else {
            throw StoreError(.write, message: "the backup did not finish in \(timeout) (it goes on)", path: path)
        }
        return try result.get()
    }
}

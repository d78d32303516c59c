import Foundation

/// Backups on the writer thread (`Sources/Strata/Backup`): the pages of one backup at a
/// time are copied from the writer's connection in steps of about `[backup]
/// step_budget_ms`, between batches, so a batch waits for one step at most. When the last
/// step is done, the asset files and parked rows are put beside the copy at once (nothing
/// commits in between), and a thread of the backup's own verifies it and gives it its
/// name (``StagedBackup``): the writer does not wait for the check.
///
/// Backups are asked for (``Engine/startBackup(to:completion:)``) or scheduled by
/// `[backup]`: every `interval_secs` on mains power, every `battery_interval_secs` on
/// battery, the newest `keep` kept.
///
/// Writer thread, but for ``requests`` (its own lock).
final class BackupTask: WriterTask {
    let context: WriterContext
    let requests = BackupRequests()
    /// Where scheduled backups go; nil when `[backup] keep` is 0.
    let folder: BackupFolder?
    private var running: (request: BackupRequest, copy: BackupCopy, started: Instant)?
    /// The wall-clock time (Unix ms) of the last scheduled backup started, or of the newest
    /// found in the folder.
    var lastScheduled: Int64?
    /// The finishing threads still running (a shutdown waits for them).
    private let finishing = DispatchGroup()

    init(_ context: WriterContext) {
        self.context = context
        let config = context.settings.backup
        folder = config.keep > 0 ? BackupFolder(document: context.store.location, folder: config.folder) : nil
        if let folder {
            folder.sweepLeftovers()
            lastScheduled = folder.backups().last?.unixMilliseconds
        }
    }

    func stepDue() -> Bool {
        running != nil || requests.hasWaiting || scheduledDue()
    }

    func runStep() {
        if running == nil, !start() { return }
        guard let (request, copy, started) = running else { return }
        let stopwatch = MonotonicClock()
        let stepStarted = stopwatch.now()
        do {
            let done = try context.store.withConnection { db -> Bool in
                guard try copy.step() else { return false }
                // The copy is the document as of now: its files are placed before anything else commits.
                let source = request.target.source, staging = request.target.staging
                let assets = try AssetFiles.place(try AssetFiles.present(db), from: source.assetsPath, to: staging.assetsPath)
                let parked = FileManager.default.fileExists(atPath: source.rejectedPath)
                if parked { try AssetFiles.copy(source.rejectedPath, to: staging.rejectedPath) }
                copy.close()
                hand(StagedBackup(target: request.target, pages: copy.pageCount, steps: copy.steps, longestStep: copy.longestStep,
                                  copyTime: stopwatch.now().duration(since: started), assets: assets, parkedRowsCopied: parked),
                     to: request)
                return true
            }
            if done {
                running = nil
            } else {
                copy.adapt(took: stopwatch.now().duration(since: stepStarted), budget: context.settings.backup.stepBudget)
                request.afterStep?(copy.steps)
            }
        } catch {
            running = nil
            copy.close()
            request.target.discardStaging()
            fail(request, StoreError(.write, wrapping: error, path: request.target.final.path))
        }
    }

    /// Starts the next backup asked for, or a scheduled one. False if none could start.
    private func start() -> Bool {
        guard let request = requests.next() ?? scheduledRequest() else { return false }
        do {
            let copy = try context.store.withConnection { db in
                try BackupCopy(from: db, to: request.target.staging.path, vfs: request.vfs, pagesPerStep: request.pagesPerStep)
            }
            running = (request, copy, MonotonicClock().now())
            return true
        } catch {
            request.target.discardStaging()
            fail(request, StoreError(.write, wrapping: error, path: request.target.final.path))
            return false
        }
    }

    /// Verifies and names the copy on a thread of its own, then tells whoever asked.
    private func hand(_ staged: StagedBackup, to request: BackupRequest) {
        let (wallClock, logger, folder, keep) = (context.settings.wallClock, context.logger, folder, context.settings.backup.keep)
        let metrics = context.metrics
        finishing.enter()
        let thread = Thread { [finishing] in
            defer { finishing.leave() }
            let result = Result { try staged.finish(wallClock: wallClock) }
            metrics.update { $0.recordBackup(result) }
            if request.scheduled, let folder {
                switch result {
                case .success(let report):
                    let removed = folder.applyRetention(keep: keep)
                    logger.info("\(report)\(removed.isEmpty ? "" : "; \(removed.count) older removed (keep = \(keep))")")
                case .failure(let error):
                    logger.warning("backup: the scheduled backup failed (\(error)); tried again later")
                }
            }
            request.completion(result)
        }
        thread.name = "strata.backup"
        thread.start()
    }

    private func fail(_ request: BackupRequest, _ error: StoreError) {
        context.metrics.update { $0.recordBackup(.failure(error)) }
        if request.scheduled {
            context.logger.warning("backup: the scheduled backup failed (\(error)); tried again later")
        }
        request.completion(.failure(error))
    }

    func writerFinished() {
        if let (request, copy, _) = running {
            running = nil
            copy.close()
            request.target.discardStaging()
            request.completion(.failure(Self.shutDown(request)))
        }
        for request in requests.close() {
            request.target.discardStaging()
            request.completion(.failure(Self.shutDown(request)))
        }
        finishing.wait()
    }

    private static func shutDown(_ request: BackupRequest) -> StoreError {
        StoreError(.write, message: "the engine shut down before the backup was done", path: request.target.final.path)
    }
}

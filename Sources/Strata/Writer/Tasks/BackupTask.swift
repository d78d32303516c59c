import Foundation
import GRDB

/// Backups on the writer thread (`Sources/Strata/Backup`), one at a time, copied in steps
/// of about `[backup] step_budget_ms` between batches, so a batch waits for one step at
/// most: the checkpointed file itself (``FileBackup``), or the pages from the writer's
/// connection (``BackupCopy``; see ``start()``). The asset files and parked rows are put
/// beside the copy at the instant it is of (nothing commits in between), and a thread of
/// the backup's own verifies it and gives it its name (``StagedBackup``): the writer does
/// not wait for the check.
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
    /// A copy of the file (not SQLite's page copy) holds the writer's checkpoints off.
    private var running: (request: BackupRequest, copy: any BackupCopier, started: Instant)? {
        didSet { context.checkpoints.held = running?.copy is FileBackup }
    }
    /// The wall-clock time (Unix ms) of the last scheduled backup started, or of the newest
    /// found in the folder.
    var lastScheduled: Int64?
    /// The writer's commits when the last scheduled backup began (0 before any): a backup
    /// is scheduled only once something was committed since, so that a new document's is
    /// never taken before its first commit (it would hold nothing, and be its only backup
    /// for a whole interval) and an idle one is not copied again and again.
    var commitsAtLastScheduled = 0
    /// The finishing threads still running (a shutdown waits for them).
    private let finishing = DispatchGroup()

    /// `[backup]`: scheduled backups, how many are kept, the copy's step budget.
    let config: BackupConfig

    init(_ context: WriterContext, config: StrataConfig) {
        self.context = context
        self.config = config.backup
        let config = config.backup
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
                // A copy of pages is the document as of its last step: its files are placed now,
                // before anything else commits (a copy of the file placed them at its start).
                let (assets, parked) = try copy.filesAtStart ?? placeFiles(of: request.target, db)
                copy.filesAtStart = (assets, parked)
                copy.close()
                hand(StagedBackup(target: request.target, pages: copy.pages, steps: copy.steps, longestStep: copy.longestStep,
                                  copyTime: stopwatch.now().duration(since: started), assets: assets, parkedRowsCopied: parked),
                     to: request)
                return true
            }
            if done {
                running = nil
            } else {
                copy.adapt(took: stopwatch.now().duration(since: stepStarted), budget: config.stepBudget)
                request.afterStep?(copy.steps)
            }
        } catch {
            running = nil
            copy.close()
            request.target.discardStaging()
            fail(request, StoreError(.write, wrapping: error, path: request.target.final.path))
        }
    }

    /// Links the asset files the document lists now into the copy's folder, and copies its
    /// parked rows.
    private func placeFiles(of target: BackupTarget, _ db: Database) throws -> (AssetFiles.Outcome, Bool) {
        let (source, staging) = (target.source, target.staging)
        let assets = try AssetFiles.place(try AssetFiles.present(db), from: source.assetsPath, to: staging.assetsPath)
        let parked = FileManager.default.fileExists(atPath: source.rejectedPath)
        if parked { try AssetFiles.copy(source.rejectedPath, to: staging.rejectedPath) }
        return (assets, parked)
    }

    /// Starts the next backup asked for, or a scheduled one. False if none could start.
    ///
    /// When a PASSIVE checkpoint (it never waits) copies the whole WAL back, the file holds
    /// every commit, and stays as it is while the writer does not checkpoint (``CheckpointHold``:
    /// commits go to the WAL only): the file itself is copied, a few MB a step
    /// (``FileBackup``), as of that commit, its asset files linked at once. Otherwise (a
    /// reader holds an older snapshot, the disk is nearly full, a test's VFS) SQLite's online
    /// backup copies the pages (``BackupCopy``), and the copy is as of its last step.
    private func start() -> Bool {
        guard let request = requests.next() ?? scheduledRequest() else { return false }
        do {
            // The checkpoint first, outside the connection's closure (it takes the connection itself).
            let wholeFile = request.vfs == nil && context.checkpoints.passive()
            let copy: any BackupCopier = try context.store.withConnection { db in
                if wholeFile {
                    let file = try FileBackup(from: request.target.source.path, to: request.target.staging.path,
                                              pageSize: context.settings.pageSize, firstStepPages: Int(request.pagesPerStep))
                    file.filesAtStart = try placeFiles(of: request.target, db)
                    return file
                }
                return try BackupCopy(from: db, to: request.target.staging.path, vfs: request.vfs, pagesPerStep: request.pagesPerStep)
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
        let (wallClock, logger, folder, keep) = (context.settings.wallClock, context.logger, folder, config.keep)
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

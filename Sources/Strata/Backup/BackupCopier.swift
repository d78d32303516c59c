/// A backup's copy in progress, a bounded step at a time (``BackupTask``): SQLite's online
/// backup of the pages (``BackupCopy``) or the checkpointed file itself (``FileBackup``).
/// Writer thread.
protocol BackupCopier: AnyObject {
    /// Copies the next part; true once everything is copied.
    func step() throws -> Bool
    /// Sizes the next step so that it takes about `budget`, from what the last one took.
    func adapt(took: Duration, budget: Duration)
    func close()
    var steps: Int { get }
    var longestStep: Duration { get }
    /// Pages in the copy.
    var pages: Int { get }
    /// The asset files linked and whether parked rows were copied, when that was done at
    /// the start (the copy is the document as of its start); nil until then.
    var filesAtStart: (AssetFiles.Outcome, Bool)? { get set }
}

extension BackupCopy: BackupCopier {
    var pages: Int { pageCount }
}

/// The document's file copied as it is after a TRUNCATE checkpoint (every commit in it, the
/// WAL empty), while the writer holds its checkpoints (``CheckpointHold``): commits go
/// to the WAL only, so the file does not change under the copy. A few MB a step, adapted to
/// the step budget. Writer thread.
final class FileBackup: BackupCopier {
    private let file: FileCopy
    private let pageSize: Int
    private var stepBytes: Int
    var filesAtStart: (AssetFiles.Outcome, Bool)?

    /// The first step copies `firstStepPages` pages' worth; the next ones adapt.
    init(from source: String, to destination: String, pageSize: Int, firstStepPages: Int) throws {
        file = try FileCopy(from: source, to: destination)
        self.pageSize = max(pageSize, 512)
        stepBytes = max(1, firstStepPages) * self.pageSize
    }

    func step() throws -> Bool { try file.step(bytes: stepBytes) }

    func adapt(took: Duration, budget: Duration) {
        guard took > .zero else { return }
        // At most twice as much as the last step, and 8 MB: a step that meets a busy disk
        // takes longer than the last one said.
        let scaled = Double(stepBytes) * min(2, max(0.25, budget / took))
        stepBytes = Int(min(Double(8 << 20), max(Double(pageSize), scaled)))
    }

    func close() { file.close() }
    var steps: Int { file.steps }
    var longestStep: Duration { file.longestStep }
    var pages: Int { file.size / pageSize }
}

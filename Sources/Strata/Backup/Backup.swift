import Foundation

/// Copies of a document that can be gone back to (`Sources/Strata/Backup`).
///
/// A backup is a complete document: the database as of one commit, with its own clean
/// mark, its asset files (hard-linked where the file system allows, copied where not)
/// and its parked rows. It is made in two stages:
///
///     writer thread: copied a step at a time between batches, asset files linked
///         ──▶ a thread of its own: clean mark, integrity_check, fsync, renamed into place
///
/// - When a passive checkpoint folds the whole WAL back into the file, the file itself is
///   copied (`FileBackup`, `sendfile(2)`, a few MB a step) while the writer holds its
///   checkpoints: commits go on into the WAL, the file does not change, and the copy is the
///   document as of that checkpoint. When a reader holds an older snapshot, SQLite's online
///   backup copies the pages instead (`BackupCopy`), and batches committed between its
///   steps go into the copy too. Either way a batch waits for one step at most
///   (`BackupTask`), and the tick thread does nothing for it.
/// - Until it is verified, the copy has a temporary, hidden name beside the final one
///   (`.NAME.partial-…`): a crash, a full disk or a failed check never leaves a file
///   under the final name. The final name is taken with `link(2)`, which never replaces a
///   file that is there.
///
/// ``Engine/backup(to:timeout:)`` waits for it; ``Engine/startBackup(to:completion:)``
/// does not; `[backup]` schedules them by power, keeping the newest `keep`
/// (``BackupConfig``); `strata backup` copies a document from outside its process and
/// ``Backup/restore(from:to:replacing:)`` (`strata restore`) puts a backup back.
public enum Backup {}

/// What a backup did.
public struct BackupReport: Sendable, Codable, Equatable, CustomStringConvertible {
    public var source: String
    /// The finished backup.
    public var destination: String
    /// Its size, in bytes.
    public var bytes: Int
    /// Pages copied, and in how many steps.
    public var pages: Int
    public var steps: Int
    /// The longest step: the most a batch waited behind the backup.
    public var longestStepMilliseconds: Double
    /// From the first step to the last.
    public var copySeconds: Double
    /// The clean mark, `integrity_check` and the syncs.
    public var verifySeconds: Double
    /// `integrity_check`'s verdict (a backup is reported done only when it is "ok").
    public var integrity: String
    /// Asset files hard-linked, copied, and listed by the copy but not found (removed
    /// since: only a copy made from outside the owner's process can meet one).
    public var assetsLinked: Int
    public var assetsCopied: Int
    public var assetsMissing: [String]
    /// The parked rows file (`.rejected`) went with it.
    public var parkedRowsCopied: Bool

    public var description: String {
        var text = """
            backup \(destination): \(bytes) bytes, \(pages) pages in \(steps) steps \
            (longest \(String(format: "%.1f", longestStepMilliseconds)) ms), copied in \(String(format: "%.2f", copySeconds)) s, \
            verified (integrity_check \(integrity)) in \(String(format: "%.2f", verifySeconds)) s
            """
        if assetsLinked + assetsCopied > 0 { text += "; \(assetsLinked) asset files linked, \(assetsCopied) copied" }
        if !assetsMissing.isEmpty { text += "; \(assetsMissing.count) asset files listed but gone from the source (\(assetsMissing.prefix(3).joined(separator: ", ")))" }
        if parkedRowsCopied { text += "; parked rows copied" }
        return text
    }
}

import ArgumentParser
import Foundation
import Strata

/// `strata backup SRC DEST [--json]`: a verified copy of a document, running or not.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a document, running or not, into a verified backup.",
        discussion: """
            Copies SRC (when nobody has it open, its file and WAL under its owner lock; when an engine \
            has it open, its pages in one read transaction of a connection of its own: the running \
            engine's writer goes on, not blocked in WAL mode), with its asset files \
            (hard-linked where possible) and parked rows, then marks the copy clean, runs \
            PRAGMA integrity_check on it, syncs it and only then gives it the name DEST. DEST must \
            not exist (a backup never replaces a file); a failure leaves nothing under that name \
            and SRC as it was. A running engine can also back itself up in steps \
            (Engine.startBackup, [backup] in the config).
            """)

    @Argument(help: "The document to back up.")
    var source: String

    @Argument(help: "The backup to make (must not exist).")
    var destination: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        do {
            let report = try Backup.copy(from: source, to: destination)
            if json { try sayJSON(report) } else { say(report.description) }
        } catch {
            printError("strata backup: \(error)")
            throw ExitCode.failure
        }
    }
}

/// `strata restore BACKUP DEST [--replace] [--json]`: a backup put back as a document.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put a backup back as a document.",
        discussion: """
            Checks BACKUP (PRAGMA integrity_check), copies it with its assets and parked rows to \
            DEST under a temporary name, gives the copy a new node id (the original may have \
            synced operations after the backup, with the numbers the copy would use next) and \
            names it DEST. Refuses while DEST is open in an engine. A document at DEST is refused \
            unless --replace; then it is set aside whole as DEST.before-restore-TIME, never \
            deleted. BACKUP stays as it is.
            """)

    @Argument(help: "The backup.")
    var backup: String

    @Argument(help: "The document to restore to.")
    var destination: String

    @Flag(help: "Set aside the document at DEST first (without it, an existing DEST is refused).")
    var replace = false

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        do {
            let report = try Backup.restore(from: backup, to: destination, replacing: replace)
            if json { try sayJSON(report) } else { say(report.description) }
        } catch {
            printError("strata restore: \(error)")
            throw ExitCode.failure
        }
    }
}

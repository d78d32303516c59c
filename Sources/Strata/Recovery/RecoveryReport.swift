/// What opening a database found and did: the previous session's end, integrity,
/// what was reloaded, and any file set aside.
public struct RecoveryReport: Sendable, Equatable, CustomStringConvertible {
    public var session: SessionState
    public var loaded: LoadSummary
    /// The operation log: this replica's node, what was logged, the clock's repairs.
    public var operations = OperationLogSummary()
    /// Where a corrupt database was moved before a fresh one replaced it.
    public var setAsideCorruptFile: String?
    /// Why it was set aside.
    public var corruption: String?
    /// What was copied from the set-aside file into the new one before the world was rebuilt
    /// (nil if an earlier open's salvage had finished and only its marker was left: its
    /// report is in the file, `strata doctor`).
    public var salvage: SalvageReport?
    /// The repair was an earlier open's, cut short (a kill, a power cut) and finished by this one.
    public var repairResumed = false
    /// Jobs the previous session left running (it crashed): marked failed ("interrupted"),
    /// to run again, or dead if that was their last attempt.
    public var interruptedJobs = 0
    /// How long marking them took (one UPDATE, before the writer starts).
    public var interruptedJobsTime: Duration = .zero
    /// What the reconciliation of the assets folder with its rows did at open.
    public var assets: ReconcileReport?
    /// Lines of the side file `PATH.rejected` that do not read as parked rows: kept there as
    /// they are (``Engine/replayRejectedWrites()`` lists them too).
    public var unreadableSideFileLines = 0

    /// The previous session crashed, or left a file that had to be set aside.
    public var crashed: Bool { session.previous == .crashed || setAsideCorruptFile != nil }

    public var description: String {
        var lines: [String] = []
        if let setAsideCorruptFile {
            lines.append("the database was corrupt (\(corruption ?? "?")): set aside as \(setAsideCorruptFile), "
                + (repairResumed ? "and the salvage an earlier start had begun was cut short: finished now" : "started a new one"))
            lines.append(salvage?.description ?? "the salvage was complete before the cut: its report is in the file (strata doctor)")
            lines.append("crashes counted: \(session.crashCount) (the damage is one), clean shutdowns: \(session.cleanShutdownCount)")
        } else {
            lines.append(previousSession)
        }
        var loadedLine = "recovered \(loaded.entities) entities and \(loaded.components) components"
        if loaded.unknownTypeRows > 0 { loadedLine += "; kept \(loaded.unknownTypeRows) rows of unregistered types" }
        if loaded.undecodableRows > 0 { loadedLine += "; kept \(loaded.undecodableRows) rows that did not decode" }
        if loaded.olderPayloadRows > 0 { loadedLine += "; \(loaded.olderPayloadRows) in an older payload version" }
        if loaded.settings > 0 { loadedLine += "; \(loaded.settings) settings" }
        if loaded.malformedEntityRows > 0 { loadedLine += "; kept \(loaded.malformedEntityRows) entity rows with a malformed or repeated id or number" }
        if loaded.orphanRows > 0 { loadedLine += "; kept \(loaded.orphanRows) component rows of no entity" }
        if loaded.unreadableSettings > 0 { loadedLine += "; kept \(loaded.unreadableSettings) settings this build cannot read" }
        lines.append(loadedLine)
        if operations.operations > 0 || !operations.vectorClockRepairs.isEmpty {
            var line = "operation log: \(operations.operations) operations from \(operations.nodes) nodes"
            if operations.gaps > 0 { line += ", \(operations.gaps) gaps" }
            if !operations.vectorClockRepairs.isEmpty {
                line += "; vector clock repaired: " + operations.vectorClockRepairs.joined(separator: "; ")
            }
            lines.append(line)
        }
        if let assets, !assets.isEmpty { lines.append(assets.description) }
        if unreadableSideFileLines > 0 {
            lines.append("\(unreadableSideFileLines) lines of the parked rows' side file do not read (torn, or from a newer build): kept there as they are")
        }
        if interruptedJobs > 0 { lines.append("\(interruptedJobs) jobs were running: marked interrupted, to run again") }
        return lines.joined(separator: "\n")
    }

    /// What the previous session's end was.
    private var previousSession: String {
        switch session.previous {
        case .none: "new database"
        case .clean:
            "previous session shut down cleanly"
                + (session.checkedUnreadTables ? "; the tables a start does not read checked (quick_check): \(session.integrity ?? "not run")" : "")
        case .crashed:
            "previous session did not shut down cleanly (crash #\(session.crashCount)); integrity check: \(session.integrity ?? "not run")"
        }
    }
}

import Foundation
import GRDB
import Logging

/// A salvage that is a transaction: a damaged document is replaced by its salvage whole,
/// or not at all. Runs at open, on the opening thread, under the document's owner lock.
///
///     1 marker   PATH.repair names PATH.corrupt-<time> (written whole, synced)
///     2 aside    PATH, PATH-wal, PATH-shm → PATH.corrupt-<time>…; the folder synced
///     3 build    PATH.salvage: the schema, what still reads of the original, the repair's
///                row (`repairs`), the session's counters; checkpointed, closed, synced
///     4 rename   PATH.salvage → PATH; the folder synced
///     5 done     PATH.repair removed
///
/// A cut at any step (SIGTERM, SIGKILL, a power cut) leaves the marker, and the next open
/// finishes the repair before anything else (``resume(_:options:logger:)``):
///
/// | found at the next open | what was cut | what the open does |
/// |---|---|---|
/// | no `PATH.corrupt-<time>` | step 1 or before | PATH is the untouched original: the marker goes, the open goes on (and finds the damage again) |
/// | `PATH.corrupt-<time>`, no PATH | steps 2 to 4 | what step 2 left at PATH moves on, then steps 3 to 5 again from the original |
/// | both | step 5 | PATH is the complete salvage: the marker goes |
///
/// So the document's name holds the original or the whole salvage, never a part of one;
/// the original is never written to, and what is left beside the document is the marker
/// while a repair is unfinished, `PATH.corrupt-<time>` (kept: it is the user's data) and,
/// while step 3 runs, `PATH.salvage`.
enum Repair {
    /// What the marker holds.
    struct Marker: Codable, Equatable {
        /// Where the damaged original goes (step 2), then is.
        var original: String
        /// Why it is repaired (the corruption SQLite reported).
        var cause: String
        /// Unix milliseconds.
        var startedAt: Int64
    }

    /// A repair done (or finished) at this open.
    struct Outcome {
        var setAside: String
        var cause: String
        /// What the salvage copied; nil when the cut came after the salvaged file was in
        /// place (its report is in the file: `repairs`, shown by `strata doctor`).
        var salvage: SalvageReport?
        /// An earlier open's repair, cut short, finished by this one.
        var resumed: Bool
    }

    /// Repairs the damaged document at `location` (steps 1 to 5). Throws if a step fails
    /// (the disk is full, the folder is read-only): the marker then stays, and the next
    /// open goes on from where this one stopped; nothing of the original is lost.
    static func run(_ location: StoreLocation, cause: String, options: Store.Options, logger: Logger) throws -> Outcome {
        let lock = try DocumentLock.acquire(for: location)
        defer { lock.release() }
        let original = setAsideTarget(for: location)
        let marker = Marker(original: original, cause: cause, startedAt: unixMilliseconds())
        try write(marker, for: location)
        try moveAside(location, to: original)
        let salvage = try build(location, from: marker, options: options, lock: lock, logger: logger)
        return Outcome(setAside: original, cause: cause, salvage: salvage, resumed: false)
    }

    /// Makes a repair of a damaged file already moved to `original` (a replacement while
    /// running was cut short: `Engine+StoreReplacement.swift`) by writing its marker:
    /// ``resume(_:options:logger:)`` then builds the salvage from it.
    static func adopt(_ location: StoreLocation, original: String, cause: String) throws {
        try write(Marker(original: original, cause: cause, startedAt: unixMilliseconds()), for: location)
    }

    /// Finishes a repair an earlier open began and did not finish (see the table above);
    /// nil if there is none. Throws ``StoreError/Code/locked`` if another engine owns the
    /// document (it finishes the repair itself).
    static func resume(_ location: StoreLocation, options: Store.Options, logger: Logger) throws -> Outcome? {
        let fm = FileManager.default
        guard fm.fileExists(atPath: location.repairMarkerPath) else { return nil }
        let lock = try DocumentLock.acquire(for: location)
        defer { lock.release() }
        guard let data = fm.contents(atPath: location.repairMarkerPath),
              let marker = try? JSONDecoder().decode(Marker.self, from: data) else {
            // Written whole (`DurableFile`), so only a hand could make it unreadable: it is
            // kept under another name, and said; the document is opened as it is.
            let kept = location.repairMarkerPath + ".unreadable-\(unixMilliseconds())"
            try DurableFile.rename(location.repairMarkerPath, to: kept)
            logger.error("repair: \(location.repairMarkerPath) does not read as a repair's marker: kept as \(kept); the document is opened as it is")
            return nil
        }
        let originalMoved = [marker.original, marker.original + "-wal"].contains { fm.fileExists(atPath: $0) }
        if !originalMoved {
            // Cut before step 2: the document is the original, untouched.
            logger.notice("repair: the repair of \(location.path) was cut before its original was moved; it starts again if the file is still damaged")
            DurableFile.remove(location.repairMarkerPath)
            return nil
        }
        if fm.fileExists(atPath: location.path) {
            // Cut at step 5: the salvage is in place, whole.
            removeSalvageFiles(location)
            DurableFile.remove(location.repairMarkerPath)
            logger.notice("repair: the salvage of \(location.path) was complete; its marker is removed")
            return Outcome(setAside: marker.original, cause: marker.cause, salvage: nil, resumed: true)
        }
        logger.error("repair: the salvage of \(location.path) from \(marker.original) was cut short: it runs again")
        try moveAside(location, to: marker.original)   // what step 2 had not moved yet
        let salvage = try build(location, from: marker, options: options, lock: lock, logger: logger)
        return Outcome(setAside: marker.original, cause: marker.cause, salvage: salvage, resumed: true)
    }

    /// The repairs recorded in the document (oldest first): where each original was set
    /// aside, why, and what its salvage kept. Any connection.
    static func recorded(_ db: Database) throws -> [DoctorReport.RecordedRepair] {
        guard try db.tableExists("repairs") else { return [] }
        return try Row.fetchAll(db, sql: "SELECT repaired_at, set_aside, cause, report FROM repairs ORDER BY id").map { row in
            DoctorReport.RecordedRepair(repairedAt: row.value("repaired_at") ?? 0, setAside: row.value("set_aside") ?? "?",
                                        cause: row.value("cause") ?? "?", report: row.value("report") ?? "?")
        }
    }

    static func write(_ marker: Marker, for location: StoreLocation) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try DurableFile.write(try encoder.encode(marker), to: location.repairMarkerPath)
    }

    /// A name to set the document aside under, free now: `PATH.corrupt-<unix time>`; two
    /// set-asides within a second get -2, -3…: never a collision, never an overwrite.
    static func setAsideTarget(for location: StoreLocation) -> String {
        let stamp = Int(Date().timeIntervalSince1970)
        let fm = FileManager.default
        var target = "\(location.path).corrupt-\(stamp)"
        var attempt = 1
        while [target, target + "-wal", target + "-shm"].contains(where: fm.fileExists(atPath:)) {
            attempt += 1
            target = "\(location.path).corrupt-\(stamp)-\(attempt)"
        }
        return target
    }

    /// Moves the document (with its WAL and shared memory) to a free set-aside name, without
    /// a marker (a file that is itself no repair's original: an unfinished copy). Returns where.
    static func setAside(_ location: StoreLocation) throws -> String {
        let target = setAsideTarget(for: location)
        try moveAside(location, to: target)
        return target
    }

    /// Step 2: the database, then its WAL and shared memory, each unless it moved already.
    static func moveAside(_ location: StoreLocation, to original: String) throws {
        let fm = FileManager.default
        for (from, to) in [(location.path, original), (location.walPath, original + "-wal"), (location.shmPath, original + "-shm")]
            where fm.fileExists(atPath: from) && !fm.fileExists(atPath: to) {
            try DurableFile.rename(from, to: to)
        }
    }

    /// Steps 3 to 5. The new file is built under `PATH.salvage`, with the document's own
    /// lock lent (no lock file of its own), and renamed into place when complete.
    private static func build(_ location: StoreLocation, from marker: Marker, options: Store.Options, lock: DocumentLock,
                              logger: Logger) throws -> SalvageReport {
        try build(location, from: marker, options: options, lock: lock) { store in
            Salvage.run(from: marker.original, into: store, logger: logger)
        }
    }

    /// Steps 3 to 5 with `fill` writing the new file's contents (a salvage of the original,
    /// or a running engine's world with what it copies from the original:
    /// `Engine+StoreReplacement.swift`), which returns the salvage's report; the session row
    /// (ended cleanly, the report's counters) and the repair's row are written after it.
    static func build(_ location: StoreLocation, from marker: Marker, options: Store.Options, lock: DocumentLock,
                      fill: (Store) throws -> SalvageReport) throws -> SalvageReport {
        removeSalvageFiles(location)
        let building = StoreLocation(path: location.salvagePath, vfs: location.vfs)
        let store = try Store(location: building, options: options, lock: lock)
        var report: SalvageReport
        do {
            report = try fill(store)
            let now = unixMilliseconds()
            try store.queue.writeWithoutTransaction { db in
                try db.committing(.full) {
                    try db.inTransaction {
                        // The salvage's own session ended cleanly; the original's counters go on
                        // (its damage counted as a crash: `Salvage.carryCounters`).
                        try db.execute(sql: """
                            INSERT INTO session_state (id, clean_shutdown, session_id, started_at, ended_at, crash_count, clean_shutdown_count)
                            VALUES (1, 1, ?, ?, ?, ?, ?)
                            ON CONFLICT (id) DO UPDATE SET clean_shutdown = 1, ended_at = excluded.ended_at,
                                crash_count = excluded.crash_count, clean_shutdown_count = excluded.clean_shutdown_count
                            """, arguments: [EntityID().withBytes { Data($0) }, marker.startedAt, now,
                                             report.carriedCrashes, report.carriedCleanShutdowns])
                        try db.execute(sql: "INSERT INTO repairs (repaired_at, set_aside, cause, report) VALUES (?, ?, ?, ?)",
                                       arguments: [now, marker.original, marker.cause, report.description])
                        return .commit
                    }
                }
                _ = try db.checkpoint(.truncate)
            }
            try store.close()
        } catch {
            try? store.close()
            throw StoreError(.write, wrapping: error, path: building.path)
        }
        try DurableFile.sync(building.path)
        // A WAL left by the close (none after the TRUNCATE checkpoint, as a rule) goes with it.
        if FileManager.default.fileExists(atPath: building.walPath) { try DurableFile.rename(building.walPath, to: location.walPath) }
        try? FileManager.default.removeItem(atPath: building.shmPath)
        try DurableFile.rename(building.path, to: location.path)
        DurableFile.remove(location.repairMarkerPath)
        return report
    }

    /// An unfinished `PATH.salvage` and its WAL files (made again from the original).
    static func removeSalvageFiles(_ location: StoreLocation) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: location.salvagePath + suffix) }
    }
}

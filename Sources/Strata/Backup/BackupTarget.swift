import Foundation

/// Where one backup goes: its final name, checked before anything is written, and the
/// hidden temporary name the copy has until it is verified. Any thread.
struct BackupTarget: Sendable {
    /// The document copied.
    let source: StoreLocation
    /// The finished backup's path (its assets: `PATH.assets`, its parked rows: `PATH.rejected`).
    let final: StoreLocation
    /// The copy until it is verified: `.NAME.partial-PID-ID` in the same folder (PID: the
    /// process making it, so that a later backup knows one left by a process that died).
    let staging: StoreLocation

    /// Checks `path` as a destination for a backup of `source`: not the source, nor one of
    /// its files, nor a name that is taken (unless `replacing`: a restore sets the document
    /// there aside first). Its folder is made if missing.
    init(source: StoreLocation, destination path: String, replacing: Bool = false) throws {
        let final = StoreLocation(path: path)
        func refuse(_ why: String) -> StoreError { StoreError(.write, message: "cannot back up to \(final.path): \(why)", path: source.path) }
        let folder = URL(fileURLWithPath: final.path).deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw refuse("its folder cannot be made (\(Self.reason(error)))")
        }
        let resolvedSource = Self.resolved(source.path)
        let resolvedFinal = Self.resolved(final.path)
        if resolvedFinal == resolvedSource { throw refuse("that is the document itself") }
        // The document's own files are beside it (`PATH-wal`, `PATH.lock`, …) or in its assets folder.
        let besideSource = !resolvedFinal.dropFirst(resolvedSource.count + 1).contains("/")
        if (besideSource && (resolvedFinal.hasPrefix(resolvedSource + "-") || resolvedFinal.hasPrefix(resolvedSource + ".")))
            || resolvedFinal.hasPrefix(resolvedSource + ".assets/") {
            throw refuse("the document uses that name (\(URL(fileURLWithPath: final.path).lastPathComponent))")
        }
        for taken in [final.path, final.assetsPath, final.rejectedPath] where !replacing && FileManager.default.fileExists(atPath: taken) {
            throw refuse("\(taken) exists (a backup never replaces a file)")
        }
        self.source = source
        self.final = final
        let name = URL(fileURLWithPath: final.path).lastPathComponent
        staging = StoreLocation(path: folder.appendingPathComponent(".\(name)\(Self.partialMarker)\(getpid())-\(UUID().uuidString.lowercased())").path)
        Self.sweepAbandoned(in: folder.path)
    }

    /// Removes the temporary copies in `folder` whose process is gone (a backup killed, by
    /// SIGKILL, SIGTERM or a power cut, before its copy was named), each with its WAL files,
    /// assets and parked rows. A copy whose process still runs is another backup at work:
    /// left alone (and so is one whose process number was taken again since). Returns the
    /// names removed.
    @discardableResult
    static func sweepAbandoned(in folder: String) -> [String] {
        var removed: [String] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(".") {
            guard let marker = name.range(of: partialMarker) else { continue }
            let rest = name[marker.upperBound...]
            guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0,
                  kill(pid, 0) != 0 && errno == ESRCH else { continue }
            // The copy's own name: up to the ID, without a `-wal`, `.assets`… that follows it.
            let id = rest[rest.index(after: dash)...].prefix(36)
            let staging = StoreLocation(path: folder + "/" + String(name[..<marker.upperBound]) + "\(pid)-" + id)
            guard name.hasPrefix(URL(fileURLWithPath: staging.path).lastPathComponent) else { continue }
            for path in [staging.path, staging.walPath, staging.shmPath, staging.rejectedPath, staging.path + "-journal"] {
                unlink(path)
            }
            try? FileManager.default.removeItem(atPath: staging.assetsPath)
            removed.append(name)
        }
        return removed
    }

    /// What every temporary name has in it (a sweep of a backup folder removes them).
    static let partialMarker = ".partial-"

    /// Removes the temporary copy and everything beside it. Never the final names.
    func discardStaging() {
        for path in [staging.path, staging.walPath, staging.shmPath, staging.rejectedPath, staging.path + "-journal"] {
            unlink(path)
        }
        try? FileManager.default.removeItem(atPath: staging.assetsPath)
    }

    /// The path with its folder's symbolic links resolved (the file itself may not exist).
    static func resolved(_ path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().resolvingSymlinksInPath()
        let file = folder.appendingPathComponent(url.lastPathComponent)
        return FileManager.default.fileExists(atPath: file.path) ? file.resolvingSymlinksInPath().path : file.path
    }

    static func reason(_ error: any Error) -> String {
        if let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError { return posix.localizedDescription }
        return (error as NSError).localizedDescription
    }
}

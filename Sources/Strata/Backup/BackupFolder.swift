import Foundation

/// The folder of a document's scheduled backups: their names, the newest, the retention.
/// Each backup is `STEM-YYYYMMDD-HHMMSS-mmm.EXT` (UTC), so that names sort by time, with
/// its `.assets` folder and `.rejected` file beside it. Writer thread and the finishing
/// thread of a scheduled backup (one at a time).
struct BackupFolder: Sendable {
    let path: String
    let stem: String
    let fileExtension: String

    /// The folder `[backup] folder` names, or `PATH.backups` beside the document.
    init(document: StoreLocation, folder: String) {
        let url = URL(fileURLWithPath: document.path)
        path = folder.isEmpty ? document.path + ".backups" : StoreLocation(path: folder).path
        fileExtension = url.pathExtension
        stem = url.deletingPathExtension().lastPathComponent
    }

    /// The path of a backup made at `unixMilliseconds`.
    func name(at unixMilliseconds: Int64) -> String {
        path + "/" + stem + "-" + Self.stamp(unixMilliseconds) + (fileExtension.isEmpty ? "" : "." + fileExtension)
    }

    /// `YYYYMMDD-HHMMSS-mmm`, in UTC: names with it sort by time.
    static func stamp(_ unixMilliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(unixMilliseconds) / 1000)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02d-%02d%02d%02d-%03d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0,
                      c.minute ?? 0, c.second ?? 0, Int(unixMilliseconds % 1000))
    }

    /// The finished backups in the folder, oldest first, with the time in their names.
    func backups() -> [(path: String, unixMilliseconds: Int64)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.compactMap { name -> (String, Int64)? in
            guard let time = time(in: name) else { return nil }
            return (path + "/" + name, time)
        }.sorted { $0.1 < $1.1 }
    }

    /// The time in a backup's file name, nil if the name is not one of this document's backups.
    func time(in name: String) -> Int64? {
        let suffix = fileExtension.isEmpty ? "" : "." + fileExtension
        guard name.hasPrefix(stem + "-"), name.hasSuffix(suffix) else { return nil }
        let stamp = name.dropFirst(stem.count + 1).dropLast(suffix.count)
        let digits = stamp.filter { $0 != "-" }
        guard stamp.count == 19, digits.count == 17, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        var parts = DateComponents()
        func field(_ from: Int, _ count: Int) -> Int { Int(String(digits.dropFirst(from).prefix(count))) ?? 0 }
        (parts.year, parts.month, parts.day) = (field(0, 4), field(4, 2), field(6, 2))
        (parts.hour, parts.minute, parts.second) = (field(8, 2), field(10, 2), field(12, 2))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        guard let date = calendar.date(from: parts) else { return nil }
        return Int64(date.timeIntervalSince1970) * 1000 + Int64(field(14, 3))
    }

    /// Deletes all but the newest `keep` backups, each with its assets and parked rows.
    /// Returns the paths deleted.
    @discardableResult
    func applyRetention(keep: Int) -> [String] {
        let all = backups()
        let old = all.dropLast(keep)
        for backup in old {
            let location = StoreLocation(path: backup.path)
            try? FileManager.default.removeItem(atPath: location.assetsPath)
            unlink(location.rejectedPath)
            unlink(location.path)
        }
        return old.map(\.path)
    }

    /// Removes what a backup interrupted by a crash left: temporary copies (hidden, marked
    /// partial), and an assets folder whose backup never got its name. Returns how many.
    @discardableResult
    func sweepLeftovers() -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        var removed = 0
        for name in names {
            let full = path + "/" + name
            let partial = name.hasPrefix("." + stem + "-") && name.contains(BackupTarget.partialMarker)
            let orphan = [".assets", ".rejected"].contains { side in
                name.hasSuffix(side) && time(in: String(name.dropLast(side.count))) != nil
                    && !FileManager.default.fileExists(atPath: String(full.dropLast(side.count)))
            }
            if partial || orphan {
                try? FileManager.default.removeItem(atPath: full)
                removed += 1
            }
        }
        return removed
    }
}

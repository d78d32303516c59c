import Foundation
import Glibc

/// `PATH.rejected`: rows the database could not take, one JSON object per line
/// (``RejectedWrite``), appended by the writer (``Writer/parkInSideFile(_:because:)``) and
/// read back by ``Engine/replayRejectedWrites()``. A line that does not read (torn by a
/// crash mid-append, or written by a newer build) is kept as it is: no rewrite drops it.
struct SideFile {
    let path: String

    /// The rows that read, and the lines that do not (kept verbatim).
    struct Contents {
        var rows: [RejectedWrite] = []
        var unreadableLines: [Data] = []
    }

    func read() -> Contents {
        var contents = Contents()
        guard let data = FileManager.default.contents(atPath: path) else { return contents }
        let decoder = JSONDecoder()
        for line in data.split(separator: UInt8(ascii: "\n")) {
            if let row = try? decoder.decode(RejectedWrite.self, from: Data(line)) {
                contents.rows.append(row)
            } else {
                contents.unreadableLines.append(Data(line))
            }
        }
        return contents
    }

    /// Replaces the file with `rows` and the unreadable lines it had, durably: a temporary
    /// file, synced, renamed over it, and the folder synced. Nothing left: the file goes.
    func rewrite(rows: [RejectedWrite], keeping unreadable: [Data]) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        let folder = (path as NSString).deletingLastPathComponent
        if rows.isEmpty && unreadable.isEmpty {
            try FileManager.default.removeItem(atPath: path)
            DurableFile.syncFolder(folder)
            return
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var data = Data()
        for line in try unreadable + rows.map({ try encoder.encode($0) }) {
            data.append(line)
            data.append(UInt8(ascii: "\n"))
        }
        do {
            try DurableFile.write(data, to: path)
        } catch let error as StoreError {
            throw StoreError(.write, message: "could not \(error.message); \(path) is unchanged", path: path)
        }
    }
}

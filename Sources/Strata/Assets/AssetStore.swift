import Foundation
import GRDB
import Logging

/// The document's files (a host's recordings, the canvas's thumbnails): large
/// blobs kept as files in `PATH.assets/`, one row each in `assets` (owner, name, size,
/// CRC32C, state). ``Engine/assets``; callable from any thread.
///
/// - A write is atomic and durable: a temporary file in the folder, written and synced,
///   renamed over the name, then the folder synced; only then is its row committed (through
///   the writer, like the job queue's calls). A crash leaves the old file or the new one,
///   never half of one; a file without its row is found by ``reconcile()``.
/// - A despawned entity's assets go with it: their rows are deleted with the entity (`ON
///   DELETE CASCADE`), a trigger lists their names in `asset_trash`, and the files are
///   removed after that commit (or at the next reconciliation, if a crash came first).
public final class AssetStore: @unchecked Sendable {
    // @unchecked Sendable: immutable; the rows change on the writer thread only.
    let location: StoreLocation
    let config: AssetsConfig
    let lane: WriterLane
    let wallClock: @Sendable () -> Int64
    let logger: Logger

    init(location: StoreLocation, config: AssetsConfig, lane: WriterLane, wallClock: @escaping @Sendable () -> Int64, logger: Logger) {
        self.location = location
        self.config = config
        self.lane = lane
        self.wallClock = wallClock
        self.logger = logger
    }

    var folder: URL { URL(fileURLWithPath: location.assetsPath) }

    /// Writes `bytes` as the file `name` (a new UUID name with `fileExtension` if nil) for
    /// `entity`, durably, and registers it. Throws ``JobError/unknownEntity(_:)`` (and
    /// removes the file) if the entity is not in the document within `timeout` (it is
    /// looked up again after each commit: its spawn may be in a batch not committed yet).
    @discardableResult
    public func write(_ bytes: [UInt8], for entity: EntityID?, name: String? = nil, fileExtension: String = "bin",
                      timeout: Duration = .seconds(30)) throws -> Asset {
        let name = name ?? "\(UUID().uuidString.lowercased()).\(fileExtension)"
        guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else {
            throw StoreError(.write, message: "an asset's name is a plain file name, not \"\(name)\"", path: location.assetsPath)
        }
        try Self.writeDurably(bytes, to: folder.appendingPathComponent(name))
        let checksum = CRC32C.checksum(bytes)
        let now = wallClock()
        do {
            return try lane.perform(.normal, waitingForBatches: timeout) { db in
                try AssetRows.register(db, name: name, entity: entity, size: bytes.count, checksum: checksum, now: now)
            } orElse: { JobError.unknownEntity(entity ?? EntityID()) }
        } catch {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
            throw error
        }
    }

    /// The file's bytes; throws if it is not there.
    public func read(_ asset: Asset) throws -> [UInt8] {
        do {
            return [UInt8](try Data(contentsOf: folder.appendingPathComponent(asset.name)))
        } catch {
            throw StoreError(.read, message: "asset \(asset.name): \(error.localizedDescription)", path: location.assetsPath)
        }
    }

    /// The assets of `entity` (all if nil), oldest first.
    public func assets(for entity: EntityID? = nil) throws -> [Asset] {
        try lane.perform(.normal) { db in
            guard let entity else { return try AssetRows.fetch(db, where: "1") }
            return try AssetRows.fetch(db, where: EntityIDColumn.matching(), EntityIDColumn.arguments(for: entity, db))
        }
    }

    /// Removes the files whose rows went (despawned entities), then their names. After a
    /// commit that deleted entities (the writer tells the engine) and in ``reconcile()``.
    @discardableResult
    func emptyTrash() -> Int {
        guard let names = try? lane.perform(.normal, { db in try AssetRows.trash(db) }), !names.isEmpty else { return 0 }
        for name in names { try? FileManager.default.removeItem(at: folder.appendingPathComponent(name)) }
        _ = try? lane.perform(.normal) { db -> Bool in
            try AssetRows.forget(trash: names, db)
            return true
        }
        return names.count
    }

    /// Writes `bytes` to `url` so that a crash leaves the old file or the new one: a
    /// temporary file beside it, written and synced, renamed over it, the folder synced.
    static func writeDurably(_ bytes: [UInt8], to url: URL) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".tmp-\(UUID().uuidString)")
        func fail(_ what: String) -> StoreError {
            StoreError(.write, message: "\(what) \(temporary.path): \(String(cString: strerror(errno)))", path: url.path)
        }
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw fail("cannot create") }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + written }, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = fail("cannot write")
                close(fd)
                unlink(temporary.path)
                throw error
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            let error = fail("cannot sync")
            close(fd)
            unlink(temporary.path)
            throw error
        }
        close(fd)
        guard rename(temporary.path, url.path) == 0 else {
            let error = fail("cannot rename")
            unlink(temporary.path)
            throw error
        }
        DurableFile.syncFolder(directory.path)
    }
}

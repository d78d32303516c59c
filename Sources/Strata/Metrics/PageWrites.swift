import CStrataVFS
import Foundation
import GRDB

/// Which pages the commits wrote: every WAL frame's page number, as the counting VFS saw
/// it go by (``CountingVFS/recordPageWrites(_:)``), tallied per page, with the number of
/// commits. ``byTree(databasePath:)`` then says which B-tree (table or index) owns each
/// page, so a run can tell where its bytes go: pages per commit by table.
///
/// A value: whoever measures owns it (`strata sim`, `strata bench`, a test).
///
/// ```swift
/// vfs.recordPageWrites(true)
/// // … run …
/// var pages = PageWrites()
/// pages.take(from: vfs)
/// for tree in try pages.byTree(databasePath: path) { print(tree.name, tree.pagesPerCommit) }
/// ```
package struct PageWrites: Sendable, Equatable {
    /// Transactions committed to the WAL (frames that carried the commit mark).
    public private(set) var commits = 0
    /// WAL frames written: one page each (a page written again in the same transaction
    /// overwrites its frame and is not counted again).
    public private(set) var frames = 0
    /// Frames per page number.
    public private(set) var framesByPage: [UInt32: Int] = [:]
    /// Frames the VFS could not keep (more than it holds between two takes).
    public private(set) var dropped = 0

    public init() {}

    /// Adds what the VFS recorded since the last take.
    public mutating func take(from vfs: CountingVFS) {
        let (entries, lost) = vfs.takePageWrites()
        add(entries)
        dropped += lost
    }

    /// Adds entries as the VFS records them: a page number, with
    /// `STRATA_VFS_COMMIT_FRAME` set on a transaction's last frame.
    mutating func add(_ entries: [UInt32]) {
        for entry in entries {
            frames += 1
            framesByPage[entry & STRATA_VFS_PAGE_MASK, default: 0] += 1
            if entry & STRATA_VFS_COMMIT_FRAME != 0 { commits += 1 }
        }
    }

    /// Frames per commit, all trees together.
    public var pagesPerCommit: Double { commits == 0 ? 0 : Double(frames) / Double(commits) }

    /// The frames of one B-tree (or of the file's other pages).
    public struct Tree: Sendable, Equatable {
        /// The table or index as `dbstat` names it (`sqlite_autoindex_T_N` for a
        /// UNIQUE or PRIMARY KEY constraint's index), or one of ``header``,
        /// ``pointerMap``, ``free``.
        public var name: String
        public var frames: Int
        /// Different pages of it written.
        public var pages: Int
        public var pagesPerCommit: Double

        /// Page 1: the file header (free-page count, schema cookie…) and `sqlite_schema`'s root.
        public static let header = "page 1 (header)"
        /// `auto_vacuum`'s pointer-map pages (<https://sqlite.org/fileformat2.html#pointer_map_or_ptrmap_pages>).
        public static let pointerMap = "pointer map"
        /// Pages no B-tree owns at the end (freed meanwhile, or on the free list).
        public static let free = "free now"
    }

    /// The frames by the B-tree that owns each page now, most frames first. Reads the
    /// file's `dbstat` table (one pass over every page: seconds for a large file) through
    /// a read-only connection. A page that changed owner during the run counts for its
    /// owner at the end.
    public func byTree(databasePath: String) throws -> [Tree] {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: databasePath, configuration: configuration)
        defer { try? queue.close() }
        let (owners, pageSize, autoVacuum) = try queue.read { db -> ([UInt32: String], Int, Bool) in
            var owners: [UInt32: String] = [:]
            let wanted = Set(framesByPage.keys)
            let rows = try Row.fetchCursor(db, sql: "SELECT name, pageno FROM dbstat")
            while let row = try rows.next() {
                guard let page = row.value(at: 1, as: Int64.self).map({ UInt32(truncatingIfNeeded: $0) }) else { continue }
                if wanted.contains(page) { owners[page] = row.value(at: 0) }
            }
            return (owners, try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096,
                    (try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0) != 0)
        }
        // With auto_vacuum, pointer-map pages are page 2 and every (usable / 5 + 1)-th after it.
        let perMap = UInt32(pageSize / 5 + 1)
        var trees: [String: (frames: Int, pages: Int)] = [:]
        for (page, frames) in framesByPage {
            let name: String
            if page == 1 {
                name = Tree.header
            } else if let owner = owners[page] {
                name = owner
            } else if autoVacuum && page >= 2 && (page - 2) % perMap == 0 {
                name = Tree.pointerMap
            } else {
                name = Tree.free
            }
            trees[name, default: (0, 0)].frames += frames
            trees[name, default: (0, 0)].pages += 1
        }
        return trees.map { name, tally in
            Tree(name: name, frames: tally.frames, pages: tally.pages,
                 pagesPerCommit: commits == 0 ? 0 : Double(tally.frames) / Double(commits))
        }.sorted { $0.frames != $1.frames ? $0.frames > $1.frames : $0.name < $1.name }
    }
}

extension PageWrites.Tree {
    /// "segments 3.1" (pages per commit, one decimal).
    public var summary: String { String(format: "%@ %.1f", name, pagesPerCommit) }
}

extension CountingVFS {
    /// Starts or stops recording the page number of every WAL frame written through this
    /// VFS (``PageWrites``). Off by default: recording takes a lock per frame.
    public func recordPageWrites(_ on: Bool) {
        _ = strata_vfs_record_pages(name, on ? 1 : 0)
    }

    /// The entries recorded since the last take, and how many frames could not be kept.
    func takePageWrites() -> (entries: [UInt32], dropped: Int) {
        var entries: [UInt32] = []
        var dropped = 0
        var chunk = [UInt32](repeating: 0, count: 65536)
        while true {
            var lost: UInt64 = 0
            let n = chunk.withUnsafeMutableBufferPointer { strata_vfs_take_pages(name, $0.baseAddress, $0.count, &lost) }
            dropped += Int(lost)
            guard n > 0 else { break }
            entries.append(contentsOf: chunk[0 ..< n])
            if n < chunk.count { break }
        }
        return (entries, dropped)
    }
}

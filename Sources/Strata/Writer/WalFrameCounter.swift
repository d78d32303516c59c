import Foundation
import GRDB
import GRDBSQLite
import Logging

/// Counts the frames in the WAL through `sqlite3_wal_hook`, which SQLite calls after
/// each commit with the WAL's frame count (<https://sqlite.org/c3ref/wal_hook.html>).
/// With `wal_autocheckpoint=0` nothing else uses the hook.
final class WalFrameCounter: @unchecked Sendable {
    // @unchecked Sendable: `frames` is written by SQLite's callback on the writer thread
    // and read on the same thread; the object is only shared to be kept alive.
    var frames: Int32 = 0
    /// Frames the last commit added.
    var lastCommitFrames: Int32 = 0

    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, { context, _, _, frames in
            guard let context else { return SQLITE_OK }   // always the counter below
            let counter = Unmanaged<WalFrameCounter>.fromOpaque(context).takeUnretainedValue()
            counter.lastCommitFrames = max(0, frames - counter.frames)
            counter.frames = frames
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    func uninstall(store: Store) {
        try? store.withConnection { db in _ = sqlite3_wal_hook(db.sqliteConnection, nil, nil) }
    }
}

import Strata
import CStrataFaultVFS
import Foundation
import GRDB
import GRDBSQLite

/// A fault-injecting SQLite VFS (`CStrataFaultVFS/strata_fault_vfs.c`), for proving the
/// durability contract: simulated power loss and injected I/O errors. `strata torture`
/// drives it; an application never needs it.
///
/// Power loss follows SQLite's crash-test model (`src/test6.c`) and LazyFS: the VFS
/// remembers every change to the database, its WAL and its journal since that file's
/// last sync. ``cutPower()`` makes every later write, truncation, sync and deletion do
/// nothing; once the engine is gone, ``applyPowerLoss(_:seed:)`` leaves the files as
/// the disk would: unsynced changes lost, or (``PowerLoss/torn``) a random subset of
/// them kept whole or torn at 512-byte sectors; files created and never synced vanish.
///
/// ```swift
/// let vfs = try FaultVFS.register(name: "torture")
/// options.vfs = vfs.name                       // the engine opens file:PATH?vfs=torture
/// vfs.arm(.write, nth: 3, code: FaultVFS.ioError(for: .write))   // the 3rd xWrite fails
/// vfs.cutPower(); engine.abandon(); try vfs.applyPowerLoss(.torn, seed: 7)
/// ```
package final class FaultVFS: Sendable {
    public let name: String

    /// The methods an I/O error can be injected into.
    public enum Method: Int32, CaseIterable, Sendable, CustomStringConvertible {
        case write, sync, truncate, read, fileSize, lock, shmMap

        public var description: String {
            switch self {
            case .write: "xWrite"
            case .sync: "xSync"
            case .truncate: "xTruncate"
            case .read: "xRead"
            case .fileSize: "xFileSize"
            case .lock: "xLock"
            case .shmMap: "xShmMap"
            }
        }
    }

    public enum PowerLoss: String, Sendable {
        /// Every change since a file's last sync is lost.
        case drop
        /// Each change since a file's last sync is kept whole, lost, or torn.
        case torn
    }

    /// What the VFS has seen.
    public struct State: Sendable {
        /// Calls per method since registration or ``reset()``.
        public var calls: [Method: Int] = [:]
        /// Injected errors returned.
        public var faults = 0
        /// The last sync that reached the disk (`CLOCK_MONOTONIC`), if any.
        public var lastSync: Instant?
        /// Unsynced changes remembered.
        public var pendingChanges = 0
    }

    /// What a simulated power loss did to the files.
    public struct Cut: Sendable {
        public var files = 0
        public var vanished = 0
        public var changes = 0
        public var kept = 0
        public var torn = 0
    }

    private init(name: String) { self.name = name }

    /// Registers (or finds) the fault VFS named `name`.
    public static func register(name: String) throws -> FaultVFS {
        let rc = strata_fault_vfs_register(name)
        guard rc == SQLITE_OK else { throw StoreError(.open, sqliteCode: rc, message: "cannot register VFS \(name)", path: "") }
        return FaultVFS(name: name)
    }

    /// The error the unix VFS returns when the disk is full (ENOSPC).
    public static let diskFull = SQLITE_FULL
    /// What a read of a damaged page gets.
    public static let corrupt = SQLITE_CORRUPT

    /// The error the unix VFS returns when `method` fails on an I/O error (EIO).
    public static func ioError(for method: Method) -> Int32 {
        switch method {
        case .write: ResultCode.SQLITE_IOERR_WRITE.rawValue
        case .sync: ResultCode.SQLITE_IOERR_FSYNC.rawValue
        case .truncate: ResultCode.SQLITE_IOERR_TRUNCATE.rawValue
        case .read: ResultCode.SQLITE_IOERR_READ.rawValue
        case .fileSize: ResultCode.SQLITE_IOERR_FSTAT.rawValue
        case .lock: ResultCode.SQLITE_IOERR_LOCK.rawValue
        case .shmMap: ResultCode.SQLITE_IOERR_SHMMAP.rawValue
        }
    }

    /// Fails the `nth` call of `method` from now (1: the next) with `code`; with
    /// `persistent`, every later call too, until ``disarm()``.
    public func arm(_ method: Method, nth: Int, code: Int32, persistent: Bool = false) {
        _ = strata_fault_vfs_arm(name, method.rawValue, UInt64(max(1, nth)), code, persistent ? 1 : 0)
    }

    /// Stops injecting errors: the fault clears.
    public func disarm() { _ = strata_fault_vfs_disarm(name) }

    public var state: State {
        var raw = strata_fault_vfs_state()
        _ = strata_fault_vfs_read(name, &raw)
        var state = State()
        withUnsafeBytes(of: raw.calls) { bytes in
            let calls = bytes.bindMemory(to: UInt64.self)
            for method in Method.allCases { state.calls[method] = Int(calls[Int(method.rawValue)]) }
        }
        state.faults = Int(raw.faults)
        state.lastSync = raw.last_sync_ns == 0 ? nil : Instant(nanoseconds: Int64(raw.last_sync_ns))
        state.pendingChanges = Int(raw.pending_changes)
        return state
    }

    /// Cuts the power: nothing written from now on reaches the files.
    public func cutPower() { _ = strata_fault_vfs_freeze(name) }

    /// With every connection through this VFS closed, rewrites the files as the power loss
    /// leaves them, forgets the changes and restores the power. Delete the `-shm` file
    /// before reopening (shared memory does not survive a power loss).
    public func applyPowerLoss(_ mode: PowerLoss, seed: UInt64) throws -> Cut {
        var raw = strata_fault_vfs_cut()
        let rc = strata_fault_vfs_power_loss(name, mode == .torn ? 1 : 0, seed, &raw)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO) }
        return Cut(files: Int(raw.files), vanished: Int(raw.vanished), changes: Int(raw.changes),
                   kept: Int(raw.kept), torn: Int(raw.torn))
    }

    /// Forgets every remembered change, zeroes the counts, disarms, restores the power.
    public func reset() { _ = strata_fault_vfs_reset(name) }
}

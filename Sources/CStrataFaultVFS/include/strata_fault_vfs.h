// A fault-injecting SQLite VFS, for proving the durability contract (`strata torture`).
// Wraps the default ("unix") VFS, like the counting VFS beside it, and adds two faults:
//
// Power loss, in the model of SQLite's own crash tests (src/test6.c) and LazyFS: the VFS
// remembers every write and truncation made to the database, its WAL and its rollback
// journal since that file's last xSync. `strata_fault_vfs_freeze` cuts the power: from
// then on writes, truncations, syncs and deletions do nothing (and report success, as
// the page cache would). Once every connection is closed, `strata_fault_vfs_power_loss`
// rewrites the files as the disk would hold them: every unsynced change is undone, then,
// in "torn" mode, a random subset is applied again, each change whole, lost, or torn
// (each 512-byte sector of it kept or lost). Files created and never synced vanish.
//
// I/O errors: `strata_fault_vfs_arm` fails the Nth call (from now) of one method, with
// the SQLite code given (an SQLITE_IOERR_* or SQLITE_FULL), once or from then on, until
// `strata_fault_vfs_disarm`. A failed call does nothing else.
//
// Registered under a name, never as the default; a connection selects it with a URI
// (`file:PATH?vfs=NAME`). Every function may be called from any thread.
#ifndef STRATA_FAULT_VFS_H
#define STRATA_FAULT_VFS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The methods an I/O error can be injected into.
typedef enum {
    STRATA_FAULT_WRITE = 0,
    STRATA_FAULT_SYNC = 1,
    STRATA_FAULT_TRUNCATE = 2,
    STRATA_FAULT_READ = 3,
    STRATA_FAULT_FILE_SIZE = 4,
    STRATA_FAULT_LOCK = 5,
    STRATA_FAULT_SHM_MAP = 6,
    STRATA_FAULT_METHODS = 7,
} strata_fault_method;

typedef struct {
    /// Calls of each method since the VFS was registered or last reset.
    uint64_t calls[STRATA_FAULT_METHODS];
    /// Injected errors returned.
    uint64_t faults;
    /// CLOCK_MONOTONIC nanoseconds of the last sync that reached the disk (not frozen,
    /// not failed), of any file; 0 if none.
    uint64_t last_sync_ns;
    /// Unsynced changes remembered, over all files.
    uint64_t pending_changes;
} strata_fault_vfs_state;

typedef struct {
    /// Files rewritten, and files that vanished (created, never synced).
    uint32_t files;
    uint32_t vanished;
    /// Unsynced changes: undone, applied again whole, applied torn.
    uint64_t changes;
    uint64_t kept;
    uint64_t torn;
} strata_fault_vfs_cut;

/// Registers a fault-injecting VFS named `name` over the default VFS (once per name).
/// Returns SQLITE_OK or an SQLite error code.
int strata_fault_vfs_register(const char *name);

/// Fails the `nth` call (1 = the next one) of `method` with `code`; with `persistent`,
/// every call after it too. Replaces any earlier arming. Returns 0, or -1 if no such VFS.
int strata_fault_vfs_arm(const char *name, int method, uint64_t nth, int code, int persistent);

/// Stops injecting errors. Returns 0, or -1.
int strata_fault_vfs_disarm(const char *name);

/// Copies the counters. Returns 0, or -1.
int strata_fault_vfs_read(const char *name, strata_fault_vfs_state *out);

/// Cuts the power: every later write, truncation, sync and deletion does nothing.
int strata_fault_vfs_freeze(const char *name);

/// After a freeze, with every connection closed: rewrites each file as a power loss
/// leaves it (`torn` = 0: every unsynced change lost; 1: a random subset, seeded by
/// `seed`, kept whole, lost or torn), then forgets the changes and thaws. Returns 0, or
/// an errno value from the rewrite.
int strata_fault_vfs_power_loss(const char *name, int torn, uint64_t seed, strata_fault_vfs_cut *out);

/// Forgets the remembered changes (as if every file were synced), zeroes the counters,
/// disarms and thaws.
int strata_fault_vfs_reset(const char *name);

#ifdef __cplusplus
}
#endif

#endif

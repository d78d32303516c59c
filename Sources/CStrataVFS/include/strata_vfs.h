// A counting SQLite VFS: wraps the default ("unix") VFS and counts, per file kind, the
// sync requests (xSync), writes (xWrite calls and bytes) and truncations (xTruncate)
// SQLite makes. Registered under a name, never as the default; a connection selects it
// with a URI (`file:PATH?vfs=NAME`). Counters are atomic: read them from any thread.
//
// It counts *requests*. The unix VFS also fsyncs the directory on the first sync of a new
// WAL or journal file, inside that same xSync: `strace -c -e trace=fsync,fdatasync`
// counts system calls, and sees those directory syncs too.
#ifndef STRATA_VFS_H
#define STRATA_VFS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    STRATA_VFS_MAIN_DB = 0,
    STRATA_VFS_WAL = 1,
    STRATA_VFS_JOURNAL = 2,     ///< The rollback journal.
    STRATA_VFS_OTHER = 3,       ///< Temporary files, sub-journals…
    STRATA_VFS_KINDS = 4,
} strata_vfs_file_kind;

typedef struct {
    uint64_t syncs;
    uint64_t writes;
    uint64_t write_bytes;
    uint64_t truncates;
} strata_vfs_file_counts;

typedef struct {
    strata_vfs_file_counts kinds[STRATA_VFS_KINDS];
    /// CLOCK_MONOTONIC nanoseconds of the latest sync request, 0 if none.
    uint64_t last_sync_ns;
} strata_vfs_counts;

/// Registers a counting VFS named `name` over the default VFS (once per name; later
/// calls return the same instance). Returns SQLITE_OK or an SQLite error code.
int strata_vfs_register(const char *name);

/// Copies the counters of the VFS named `name`; returns 0, or -1 if no such VFS.
int strata_vfs_read(const char *name, strata_vfs_counts *out);

/// Zeroes the counters of the VFS named `name`.
int strata_vfs_reset(const char *name);

#ifdef __cplusplus
}
#endif

#endif

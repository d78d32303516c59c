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

#include <stddef.h>
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

/// How many counting VFSs this process has registered.
int strata_vfs_registered(void);

/// Copies the counters of the VFS named `name`; returns 0, or -1 if no such VFS.
int strata_vfs_read(const char *name, strata_vfs_counts *out);

/// Zeroes the counters of the VFS named `name`.
int strata_vfs_reset(const char *name);

/// Page numbers are below 2^30 (SQLite's largest page count); an entry of the page log
/// is one, with this bit set when its frame ends a transaction (a commit).
#define STRATA_VFS_COMMIT_FRAME 0x80000000u
#define STRATA_VFS_PAGE_MASK 0x7FFFFFFFu
/// Entries kept between two takes; frames past that are counted as dropped.
#define STRATA_VFS_MAX_PAGE_ENTRIES ((size_t)1 << 24)

/// Starts (`on` != 0) or stops recording the page number of every WAL frame written
/// through the VFS named `name` (what `strata_vfs_take_pages` returns). Returns 0, or -1
/// if no such VFS. Off by default: a recording costs a lock per frame.
int strata_vfs_record_pages(const char *name, int on);

/// Moves up to `capacity` recorded entries, oldest first, into `out` and returns how
/// many (-1 if no such VFS); `dropped` (if not NULL) gets the frames not kept since the
/// last take, and that count restarts.
long strata_vfs_take_pages(const char *name, uint32_t *out, size_t capacity, uint64_t *dropped);

#ifdef __cplusplus
}
#endif

#endif

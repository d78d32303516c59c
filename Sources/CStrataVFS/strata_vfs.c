// See strata_vfs.h. A pass-through VFS in the style of SQLite's own test_vfstrace.c and
// the multiplexor: every method forwards to the wrapped VFS or file, and the ones that
// touch the disk bump a counter first (https://sqlite.org/vfs.html).
#include "strata_vfs.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct counting_vfs {
    sqlite3_vfs base;                 // must be first: SQLite sees a sqlite3_vfs
    sqlite3_vfs *real;
    char *name;
    uint64_t counters[STRATA_VFS_KINDS][4];   // syncs, writes, write_bytes, truncates
    uint64_t last_sync_ns;
    // The WAL frames written while recording (strata_vfs_record_pages): one entry per
    // frame, its page number, with STRATA_VFS_COMMIT_FRAME set on a transaction's last.
    // Guarded by `pages_mutex`; at most STRATA_VFS_MAX_PAGE_ENTRIES kept between takes.
    int record_pages;
    sqlite3_mutex *pages_mutex;
    uint32_t *pages;
    size_t page_count, page_capacity;
    uint64_t pages_dropped;
    struct counting_vfs *next;
} counting_vfs;

typedef struct {
    sqlite3_file base;                // must be first
    counting_vfs *vfs;
    int kind;
    sqlite3_file *real;               // allocated right after this struct
} counting_file;

enum { SYNCS = 0, WRITES = 1, WRITE_BYTES = 2, TRUNCATES = 3 };

static counting_vfs *registry = NULL;
static sqlite3_mutex *registry_mutex(void) { return sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_VFS1); }

static void bump(counting_file *f, int counter, uint64_t by) {
    __atomic_fetch_add(&f->vfs->counters[f->kind][counter], by, __ATOMIC_RELAXED);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// ---- sqlite3_io_methods ----

static int c_close(sqlite3_file *file) {
    counting_file *f = (counting_file *)file;
    int rc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    return rc;
}
static int c_read(sqlite3_file *file, void *buf, int amount, sqlite3_int64 offset) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xRead(f->real, buf, amount, offset);
}
// A WAL frame header (https://sqlite.org/fileformat2.html#walformat): 24 bytes written on
// their own (wal.c's walWriteOneFrame writes the header, then the page), at offset 32 +
// k·(24 + page size); bytes 0–3 are the page number, 4–7 the database size in pages after
// a commit (nonzero only on a transaction's last frame), both big-endian.
static void note_frame(counting_vfs *cv, const unsigned char *header) {
    uint32_t page = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 | (uint32_t)header[2] << 8 | header[3];
    uint32_t commit = (uint32_t)header[4] << 24 | (uint32_t)header[5] << 16 | (uint32_t)header[6] << 8 | header[7];
    if (page == 0 || page > STRATA_VFS_PAGE_MASK) return;
    uint32_t entry = page | (commit ? STRATA_VFS_COMMIT_FRAME : 0);
    sqlite3_mutex_enter(cv->pages_mutex);
    if (cv->page_count == cv->page_capacity) {
        size_t grown = cv->page_capacity ? cv->page_capacity * 2 : 4096;
        uint32_t *pages = grown <= STRATA_VFS_MAX_PAGE_ENTRIES ? realloc(cv->pages, grown * sizeof *pages) : NULL;
        if (pages) {
            cv->pages = pages;
            cv->page_capacity = grown;
        }
    }
    if (cv->page_count < cv->page_capacity) {
        cv->pages[cv->page_count++] = entry;
    } else {
        cv->pages_dropped++;
    }
    sqlite3_mutex_leave(cv->pages_mutex);
}

static int c_write(sqlite3_file *file, const void *buf, int amount, sqlite3_int64 offset) {
    counting_file *f = (counting_file *)file;
    bump(f, WRITES, 1);
    bump(f, WRITE_BYTES, (uint64_t)amount);
    if (f->kind == STRATA_VFS_WAL && amount == 24 && offset >= 32 && __atomic_load_n(&f->vfs->record_pages, __ATOMIC_RELAXED)) {
        note_frame(f->vfs, buf);
    }
    return f->real->pMethods->xWrite(f->real, buf, amount, offset);
}
static int c_truncate(sqlite3_file *file, sqlite3_int64 size) {
    counting_file *f = (counting_file *)file;
    bump(f, TRUNCATES, 1);
    return f->real->pMethods->xTruncate(f->real, size);
}
static int c_sync(sqlite3_file *file, int flags) {
    counting_file *f = (counting_file *)file;
    bump(f, SYNCS, 1);
    __atomic_store_n(&f->vfs->last_sync_ns, now_ns(), __ATOMIC_RELAXED);
    return f->real->pMethods->xSync(f->real, flags);
}
static int c_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xFileSize(f->real, size);
}
static int c_lock(sqlite3_file *file, int lock) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xLock(f->real, lock);
}
static int c_unlock(sqlite3_file *file, int lock) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xUnlock(f->real, lock);
}
static int c_check_reserved_lock(sqlite3_file *file, int *out) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}
static int c_file_control(sqlite3_file *file, int op, void *arg) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xFileControl(f->real, op, arg);
}
static int c_sector_size(sqlite3_file *file) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xSectorSize(f->real);
}
static int c_device_characteristics(sqlite3_file *file) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}
static int c_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xShmMap(f->real, page, size, extend, out);
}
static int c_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}
static void c_shm_barrier(sqlite3_file *file) {
    counting_file *f = (counting_file *)file;
    f->real->pMethods->xShmBarrier(f->real);
}
static int c_shm_unmap(sqlite3_file *file, int delete_flag) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xShmUnmap(f->real, delete_flag);
}
static int c_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xFetch(f->real, offset, amount, out);
}
static int c_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *p) {
    counting_file *f = (counting_file *)file;
    return f->real->pMethods->xUnfetch(f->real, offset, p);
}

// One method table per io_methods version, so SQLite never calls a method the wrapped
// file lacks (the unix VFS is version 3; others may be older).
static const sqlite3_io_methods methods_v1 = {
    1, c_close, c_read, c_write, c_truncate, c_sync, c_file_size, c_lock, c_unlock,
    c_check_reserved_lock, c_file_control, c_sector_size, c_device_characteristics,
    0, 0, 0, 0, 0, 0,
};
static const sqlite3_io_methods methods_v2 = {
    2, c_close, c_read, c_write, c_truncate, c_sync, c_file_size, c_lock, c_unlock,
    c_check_reserved_lock, c_file_control, c_sector_size, c_device_characteristics,
    c_shm_map, c_shm_lock, c_shm_barrier, c_shm_unmap, 0, 0,
};
static const sqlite3_io_methods methods_v3 = {
    3, c_close, c_read, c_write, c_truncate, c_sync, c_file_size, c_lock, c_unlock,
    c_check_reserved_lock, c_file_control, c_sector_size, c_device_characteristics,
    c_shm_map, c_shm_lock, c_shm_barrier, c_shm_unmap, c_fetch, c_unfetch,
};

// ---- sqlite3_vfs ----

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    counting_vfs *cv = (counting_vfs *)vfs;
    counting_file *f = (counting_file *)file;
    memset(f, 0, sizeof *f);
    f->vfs = cv;
    f->real = (sqlite3_file *)&f[1];
    f->kind = (flags & SQLITE_OPEN_MAIN_DB) ? STRATA_VFS_MAIN_DB
            : (flags & SQLITE_OPEN_WAL) ? STRATA_VFS_WAL
            : (flags & SQLITE_OPEN_MAIN_JOURNAL) ? STRATA_VFS_JOURNAL
            : STRATA_VFS_OTHER;
    int rc = cv->real->xOpen(cv->real, name, f->real, flags, out_flags);
    if (f->real->pMethods) {
        int version = f->real->pMethods->iVersion;
        f->base.pMethods = version >= 3 ? &methods_v3 : version == 2 ? &methods_v2 : &methods_v1;
    } else {
        f->base.pMethods = NULL;   // open failed: SQLite will not call xClose
    }
    return rc;
}
static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    return ((counting_vfs *)vfs)->real->xDelete(((counting_vfs *)vfs)->real, name, sync_dir);
}
static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    return ((counting_vfs *)vfs)->real->xAccess(((counting_vfs *)vfs)->real, name, flags, out);
}
static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    return ((counting_vfs *)vfs)->real->xFullPathname(((counting_vfs *)vfs)->real, name, n, out);
}
static void *v_dl_open(sqlite3_vfs *vfs, const char *name) {
    return ((counting_vfs *)vfs)->real->xDlOpen(((counting_vfs *)vfs)->real, name);
}
static void v_dl_error(sqlite3_vfs *vfs, int n, char *out) {
    ((counting_vfs *)vfs)->real->xDlError(((counting_vfs *)vfs)->real, n, out);
}
static void (*v_dl_sym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    return ((counting_vfs *)vfs)->real->xDlSym(((counting_vfs *)vfs)->real, handle, symbol);
}
static void v_dl_close(sqlite3_vfs *vfs, void *handle) {
    ((counting_vfs *)vfs)->real->xDlClose(((counting_vfs *)vfs)->real, handle);
}
static int v_randomness(sqlite3_vfs *vfs, int n, char *out) {
    return ((counting_vfs *)vfs)->real->xRandomness(((counting_vfs *)vfs)->real, n, out);
}
static int v_sleep(sqlite3_vfs *vfs, int microseconds) {
    return ((counting_vfs *)vfs)->real->xSleep(((counting_vfs *)vfs)->real, microseconds);
}
static int v_current_time(sqlite3_vfs *vfs, double *out) {
    return ((counting_vfs *)vfs)->real->xCurrentTime(((counting_vfs *)vfs)->real, out);
}
static int v_get_last_error(sqlite3_vfs *vfs, int n, char *out) {
    sqlite3_vfs *real = ((counting_vfs *)vfs)->real;
    return real->xGetLastError ? real->xGetLastError(real, n, out) : 0;
}
static int v_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    return ((counting_vfs *)vfs)->real->xCurrentTimeInt64(((counting_vfs *)vfs)->real, out);
}

static counting_vfs *find(const char *name) {
    for (counting_vfs *v = registry; v; v = v->next) {
        if (strcmp(v->name, name) == 0) return v;
    }
    return NULL;
}

int strata_vfs_register(const char *name) {
    int rc = sqlite3_initialize();
    if (rc != SQLITE_OK) return rc;
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    if (find(name)) {
        sqlite3_mutex_leave(mutex);
        return SQLITE_OK;
    }
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    counting_vfs *cv = calloc(1, sizeof *cv);
    if (!real || !cv) {
        sqlite3_mutex_leave(mutex);
        free(cv);
        return SQLITE_NOMEM;
    }
    cv->real = real;
    cv->name = strdup(name);
    cv->pages_mutex = sqlite3_mutex_alloc(SQLITE_MUTEX_FAST);
    cv->base.iVersion = 2;   // xCurrentTimeInt64; the version-3 syscall hooks are not forwarded
    cv->base.szOsFile = (int)sizeof(counting_file) + real->szOsFile;
    cv->base.mxPathname = real->mxPathname;
    cv->base.zName = cv->name;
    cv->base.xOpen = v_open;
    cv->base.xDelete = v_delete;
    cv->base.xAccess = v_access;
    cv->base.xFullPathname = v_full_pathname;
    cv->base.xDlOpen = v_dl_open;
    cv->base.xDlError = v_dl_error;
    cv->base.xDlSym = v_dl_sym;
    cv->base.xDlClose = v_dl_close;
    cv->base.xRandomness = v_randomness;
    cv->base.xSleep = v_sleep;
    cv->base.xCurrentTime = v_current_time;
    cv->base.xGetLastError = v_get_last_error;
    cv->base.xCurrentTimeInt64 = v_current_time_int64;
    rc = sqlite3_vfs_register(&cv->base, 0);
    if (rc == SQLITE_OK) {
        cv->next = registry;
        registry = cv;
    } else {
        free(cv->name);
        free(cv);
    }
    sqlite3_mutex_leave(mutex);
    return rc;
}

int strata_vfs_registered(void) {
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    int n = 0;
    for (counting_vfs *v = registry; v; v = v->next) n++;
    sqlite3_mutex_leave(mutex);
    return n;
}

int strata_vfs_read(const char *name, strata_vfs_counts *out) {
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    counting_vfs *cv = find(name);
    sqlite3_mutex_leave(mutex);
    if (!cv) return -1;
    for (int k = 0; k < STRATA_VFS_KINDS; k++) {
        out->kinds[k].syncs = __atomic_load_n(&cv->counters[k][SYNCS], __ATOMIC_RELAXED);
        out->kinds[k].writes = __atomic_load_n(&cv->counters[k][WRITES], __ATOMIC_RELAXED);
        out->kinds[k].write_bytes = __atomic_load_n(&cv->counters[k][WRITE_BYTES], __ATOMIC_RELAXED);
        out->kinds[k].truncates = __atomic_load_n(&cv->counters[k][TRUNCATES], __ATOMIC_RELAXED);
    }
    out->last_sync_ns = __atomic_load_n(&cv->last_sync_ns, __ATOMIC_RELAXED);
    return 0;
}

int strata_vfs_reset(const char *name) {
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    counting_vfs *cv = find(name);
    sqlite3_mutex_leave(mutex);
    if (!cv) return -1;
    for (int k = 0; k < STRATA_VFS_KINDS; k++) {
        for (int c = 0; c < 4; c++) __atomic_store_n(&cv->counters[k][c], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&cv->last_sync_ns, 0, __ATOMIC_RELAXED);
    return 0;
}

int strata_vfs_record_pages(const char *name, int on) {
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    counting_vfs *cv = find(name);
    sqlite3_mutex_leave(mutex);
    if (!cv || !cv->pages_mutex) return -1;
    __atomic_store_n(&cv->record_pages, on ? 1 : 0, __ATOMIC_RELAXED);
    return 0;
}

long strata_vfs_take_pages(const char *name, uint32_t *out, size_t capacity, uint64_t *dropped) {
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    counting_vfs *cv = find(name);
    sqlite3_mutex_leave(mutex);
    if (!cv || !cv->pages_mutex) return -1;
    sqlite3_mutex_enter(cv->pages_mutex);
    size_t n = cv->page_count < capacity ? cv->page_count : capacity;
    if (n > 0) {
        memcpy(out, cv->pages, n * sizeof *out);
        memmove(cv->pages, cv->pages + n, (cv->page_count - n) * sizeof *out);
        cv->page_count -= n;
    }
    if (dropped) {
        *dropped = cv->pages_dropped;
        cv->pages_dropped = 0;
    }
    sqlite3_mutex_leave(cv->pages_mutex);
    return (long)n;
}

// See strata_fault_vfs.h. A pass-through VFS like strata_vfs.c; the methods that touch
// the disk first ask whether to fail (an armed I/O error) or to do nothing (the power is
// cut), and the ones that change a file remember what they overwrote until its next sync.
//
// Every file operation runs under the VFS's mutex, so a freeze is atomic: no write
// reaches the file after it. That serializes the VFS's I/O, which a torture run can afford.
#include "strata_fault_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { CHANGE_WRITE = 0, CHANGE_TRUNCATE = 1 };
enum { SECTOR = 512 };

/// One unsynced change of a file: what it did, and what it overwrote or cut.
typedef struct {
    int kind;
    sqlite3_int64 offset;       // write: where; truncate: the new size
    int amount;                 // write: bytes written
    unsigned char *data;        // write: the bytes written
    sqlite3_int64 size_before;  // the file's size before the change
    unsigned char *undo;        // the bytes it overwrote (write, from offset) or cut (truncate, from the new size)
    sqlite3_int64 undo_len;
} change;

/// The unsynced changes of one path. Never freed before the VFS: file handles point to it.
typedef struct journal {
    char *path;
    int created;                // created since its last sync: vanishes at a power loss
    change *changes;
    size_t count, capacity;
    struct journal *next;
} journal;

typedef struct fault_vfs {
    sqlite3_vfs base;           // must be first: SQLite sees a sqlite3_vfs
    sqlite3_vfs *real;
    char *name;
    sqlite3_mutex *mutex;
    journal *journals;
    int frozen;
    int armed, method, code, persistent;
    uint64_t nth, armed_at;
    uint64_t calls[STRATA_FAULT_METHODS];
    uint64_t faults;
    uint64_t last_sync_ns;
    struct fault_vfs *next;
} fault_vfs;

typedef struct {
    sqlite3_file base;          // must be first
    fault_vfs *vfs;
    journal *journal;           // NULL: not remembered (temporary files)
    sqlite3_file *real;         // allocated right after this struct
} fault_file;

static fault_vfs *registry = NULL;
static sqlite3_mutex *registry_mutex(void) { return sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_VFS2); }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void free_changes(journal *j) {
    for (size_t i = 0; i < j->count; i++) {
        free(j->changes[i].data);
        free(j->changes[i].undo);
    }
    j->count = 0;
}

/// Under the mutex: counts the call, and returns the armed error if this call is to fail.
static int inject(fault_vfs *v, int method) {
    uint64_t n = ++v->calls[method];
    if (!v->armed || v->method != method) return SQLITE_OK;
    uint64_t k = n - v->armed_at;
    if (k == v->nth || (v->persistent && k > v->nth)) {
        v->faults++;
        return v->code;
    }
    return SQLITE_OK;
}

static change *push(journal *j) {
    if (j->count == j->capacity) {
        size_t capacity = j->capacity ? j->capacity * 2 : 16;
        change *grown = realloc(j->changes, capacity * sizeof *grown);
        if (!grown) return NULL;
        j->changes = grown;
        j->capacity = capacity;
    }
    change *c = &j->changes[j->count++];
    memset(c, 0, sizeof *c);
    return c;
}

/// Reads [from, to) of the real file into a new buffer (what a change is about to replace).
static int read_range(sqlite3_file *real, sqlite3_int64 from, sqlite3_int64 to, unsigned char **out) {
    *out = NULL;
    if (to <= from) return SQLITE_OK;
    *out = malloc((size_t)(to - from));
    if (!*out) return SQLITE_NOMEM;
    return real->pMethods->xRead(real, *out, (int)(to - from), from);
}

// ---- sqlite3_io_methods ----

// Runs the statements under the VFS's mutex (variadic: commas in them are not arguments).
#define LOCKED(v, ...) do { sqlite3_mutex_enter((v)->mutex); __VA_ARGS__; sqlite3_mutex_leave((v)->mutex); } while (0)

static int f_close(sqlite3_file *file) {
    fault_file *f = (fault_file *)file;
    return f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
}

static int f_read(sqlite3_file *file, void *buf, int amount, sqlite3_int64 offset) {
    fault_file *f = (fault_file *)file;
    int rc;
    LOCKED(f->vfs, {
        rc = inject(f->vfs, STRATA_FAULT_READ);
        if (rc == SQLITE_OK) rc = f->real->pMethods->xRead(f->real, buf, amount, offset);
    });
    return rc;
}

static int f_write(sqlite3_file *file, const void *buf, int amount, sqlite3_int64 offset) {
    fault_file *f = (fault_file *)file;
    fault_vfs *v = f->vfs;
    int rc;
    LOCKED(v, {
        rc = inject(v, STRATA_FAULT_WRITE);
        if (rc == SQLITE_OK && !v->frozen) {
            change *c = NULL;
            if (f->journal) {
                sqlite3_int64 size = 0;
                rc = f->real->pMethods->xFileSize(f->real, &size);
                if (rc == SQLITE_OK && (c = push(f->journal)) == NULL) rc = SQLITE_NOMEM;
                if (rc == SQLITE_OK) {
                    c->kind = CHANGE_WRITE;
                    c->offset = offset;
                    c->amount = amount;
                    c->size_before = size;
                    sqlite3_int64 end = offset + amount < size ? offset + amount : size;
                    c->undo_len = end > offset ? end - offset : 0;
                    c->data = malloc((size_t)amount);
                    if (!c->data) rc = SQLITE_NOMEM;
                    else memcpy(c->data, buf, (size_t)amount);
                    if (rc == SQLITE_OK) rc = read_range(f->real, offset, end, &c->undo);
                }
            }
            if (rc == SQLITE_OK) rc = f->real->pMethods->xWrite(f->real, buf, amount, offset);
            if (rc != SQLITE_OK && c) {   // it did not happen: nothing to undo
                f->journal->count--;
                free(c->data);
                free(c->undo);
            }
        }
    });
    return rc;
}

static int f_truncate(sqlite3_file *file, sqlite3_int64 size) {
    fault_file *f = (fault_file *)file;
    fault_vfs *v = f->vfs;
    int rc;
    LOCKED(v, {
        rc = inject(v, STRATA_FAULT_TRUNCATE);
        if (rc == SQLITE_OK && !v->frozen) {
            change *c = NULL;
            if (f->journal) {
                sqlite3_int64 before = 0;
                rc = f->real->pMethods->xFileSize(f->real, &before);
                if (rc == SQLITE_OK && (c = push(f->journal)) == NULL) rc = SQLITE_NOMEM;
                if (rc == SQLITE_OK) {
                    c->kind = CHANGE_TRUNCATE;
                    c->offset = size;
                    c->size_before = before;
                    c->undo_len = before > size ? before - size : 0;
                    rc = read_range(f->real, size, before, &c->undo);
                }
            }
            if (rc == SQLITE_OK) rc = f->real->pMethods->xTruncate(f->real, size);
            if (rc != SQLITE_OK && c) {
                f->journal->count--;
                free(c->undo);
            }
        }
    });
    return rc;
}

static int f_sync(sqlite3_file *file, int flags) {
    fault_file *f = (fault_file *)file;
    fault_vfs *v = f->vfs;
    int rc;
    LOCKED(v, {
        rc = inject(v, STRATA_FAULT_SYNC);
        if (rc == SQLITE_OK && !v->frozen) {
            rc = f->real->pMethods->xSync(f->real, flags);
            if (rc == SQLITE_OK) {
                if (f->journal) {
                    free_changes(f->journal);
                    f->journal->created = 0;
                }
                v->last_sync_ns = now_ns();
            }
        }
    });
    return rc;
}

static int f_file_size(sqlite3_file *file, sqlite3_int64 *size) {
    fault_file *f = (fault_file *)file;
    int rc;
    LOCKED(f->vfs, {
        rc = inject(f->vfs, STRATA_FAULT_FILE_SIZE);
        if (rc == SQLITE_OK) rc = f->real->pMethods->xFileSize(f->real, size);
    });
    return rc;
}

static int f_lock(sqlite3_file *file, int lock) {
    fault_file *f = (fault_file *)file;
    int rc;
    LOCKED(f->vfs, {
        rc = inject(f->vfs, STRATA_FAULT_LOCK);
        if (rc == SQLITE_OK) rc = f->real->pMethods->xLock(f->real, lock);
    });
    return rc;
}

static int f_unlock(sqlite3_file *file, int lock) {
    fault_file *f = (fault_file *)file;
    return f->real->pMethods->xUnlock(f->real, lock);
}
static int f_check_reserved_lock(sqlite3_file *file, int *out) {
    fault_file *f = (fault_file *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}
static int f_file_control(sqlite3_file *file, int op, void *arg) {
    fault_file *f = (fault_file *)file;
    // A size hint makes the unix VFS extend the file behind the VFS's back; declining it
    // is allowed (SQLite ignores SQLITE_NOTFOUND) and keeps every change remembered.
    if (op == SQLITE_FCNTL_SIZE_HINT) return SQLITE_NOTFOUND;
    return f->real->pMethods->xFileControl(f->real, op, arg);
}
static int f_sector_size(sqlite3_file *file) {
    fault_file *f = (fault_file *)file;
    return f->real->pMethods->xSectorSize(f->real);
}
static int f_device_characteristics(sqlite3_file *file) {
    fault_file *f = (fault_file *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int f_shm_map(sqlite3_file *file, int page, int size, int extend, void volatile **out) {
    fault_file *f = (fault_file *)file;
    int rc;
    LOCKED(f->vfs, {
        rc = inject(f->vfs, STRATA_FAULT_SHM_MAP);
    });
    if (rc != SQLITE_OK) {
        *out = NULL;
        return rc;
    }
    return f->real->pMethods->xShmMap(f->real, page, size, extend, out);
}
static int f_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
    fault_file *f = (fault_file *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}
static void f_shm_barrier(sqlite3_file *file) {
    fault_file *f = (fault_file *)file;
    f->real->pMethods->xShmBarrier(f->real);
}
static int f_shm_unmap(sqlite3_file *file, int delete_flag) {
    fault_file *f = (fault_file *)file;
    return f->real->pMethods->xShmUnmap(f->real, delete_flag);
}

// No xFetch/xUnfetch (version 2): SQLite reads through xRead, where faults are injected.
static const sqlite3_io_methods methods_v1 = {
    1, f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock,
    f_check_reserved_lock, f_file_control, f_sector_size, f_device_characteristics,
    0, 0, 0, 0, 0, 0,
};
static const sqlite3_io_methods methods_v2 = {
    2, f_close, f_read, f_write, f_truncate, f_sync, f_file_size, f_lock, f_unlock,
    f_check_reserved_lock, f_file_control, f_sector_size, f_device_characteristics,
    f_shm_map, f_shm_lock, f_shm_barrier, f_shm_unmap, 0, 0,
};

// ---- sqlite3_vfs ----

/// Under the mutex: the journal of `path`, created if missing.
static journal *journal_for(fault_vfs *v, const char *path) {
    for (journal *j = v->journals; j; j = j->next) {
        if (strcmp(j->path, path) == 0) return j;
    }
    journal *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->path = strdup(path);
    j->next = v->journals;
    v->journals = j;
    return j;
}

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    fault_vfs *v = (fault_vfs *)vfs;
    fault_file *f = (fault_file *)file;
    memset(f, 0, sizeof *f);
    f->vfs = v;
    f->real = (sqlite3_file *)&f[1];
    int remembered = name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL));
    int existed = 1;
    if (remembered && v->real->xAccess(v->real, name, SQLITE_ACCESS_EXISTS, &existed) != SQLITE_OK) existed = 1;
    int rc = v->real->xOpen(v->real, name, f->real, flags, out_flags);
    if (f->real->pMethods) {
        f->base.pMethods = f->real->pMethods->iVersion >= 2 ? &methods_v2 : &methods_v1;
    } else {
        f->base.pMethods = NULL;   // open failed: SQLite will not call xClose
    }
    if (rc == SQLITE_OK && remembered) {
        LOCKED(v, {
            f->journal = journal_for(v, name);
            if (f->journal && !existed) f->journal->created = 1;
        });
        if (!f->journal) {
            f->real->pMethods->xClose(f->real);
            f->base.pMethods = NULL;
            return SQLITE_NOMEM;
        }
    }
    return rc;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir) {
    fault_vfs *v = (fault_vfs *)vfs;
    int rc = SQLITE_OK;
    LOCKED(v, {
        if (!v->frozen) {
            rc = v->real->xDelete(v->real, name, sync_dir);
            for (journal *j = v->journals; j; j = j->next) {
                if (strcmp(j->path, name) == 0) {
                    free_changes(j);
                    j->created = 0;
                }
            }
        }
    });
    return rc;
}
static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    return ((fault_vfs *)vfs)->real->xAccess(((fault_vfs *)vfs)->real, name, flags, out);
}
static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    return ((fault_vfs *)vfs)->real->xFullPathname(((fault_vfs *)vfs)->real, name, n, out);
}
static void *v_dl_open(sqlite3_vfs *vfs, const char *name) {
    return ((fault_vfs *)vfs)->real->xDlOpen(((fault_vfs *)vfs)->real, name);
}
static void v_dl_error(sqlite3_vfs *vfs, int n, char *out) {
    ((fault_vfs *)vfs)->real->xDlError(((fault_vfs *)vfs)->real, n, out);
}
static void (*v_dl_sym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    return ((fault_vfs *)vfs)->real->xDlSym(((fault_vfs *)vfs)->real, handle, symbol);
}
static void v_dl_close(sqlite3_vfs *vfs, void *handle) {
    ((fault_vfs *)vfs)->real->xDlClose(((fault_vfs *)vfs)->real, handle);
}
static int v_randomness(sqlite3_vfs *vfs, int n, char *out) {
    return ((fault_vfs *)vfs)->real->xRandomness(((fault_vfs *)vfs)->real, n, out);
}
static int v_sleep(sqlite3_vfs *vfs, int microseconds) {
    return ((fault_vfs *)vfs)->real->xSleep(((fault_vfs *)vfs)->real, microseconds);
}
static int v_current_time(sqlite3_vfs *vfs, double *out) {
    return ((fault_vfs *)vfs)->real->xCurrentTime(((fault_vfs *)vfs)->real, out);
}
static int v_get_last_error(sqlite3_vfs *vfs, int n, char *out) {
    sqlite3_vfs *real = ((fault_vfs *)vfs)->real;
    return real->xGetLastError ? real->xGetLastError(real, n, out) : 0;
}
static int v_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    return ((fault_vfs *)vfs)->real->xCurrentTimeInt64(((fault_vfs *)vfs)->real, out);
}

static fault_vfs *find(const char *name) {
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    fault_vfs *v = registry;
    while (v && strcmp(v->name, name) != 0) v = v->next;
    sqlite3_mutex_leave(mutex);
    return v;
}

int strata_fault_vfs_register(const char *name) {
    int rc = sqlite3_initialize();
    if (rc != SQLITE_OK) return rc;
    if (find(name)) return SQLITE_OK;
    sqlite3_mutex *mutex = registry_mutex();
    sqlite3_mutex_enter(mutex);
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    fault_vfs *v = calloc(1, sizeof *v);
    sqlite3_mutex *own = sqlite3_mutex_alloc(SQLITE_MUTEX_RECURSIVE);
    if (!real || !v || !own) {
        sqlite3_mutex_leave(mutex);
        free(v);
        if (own) sqlite3_mutex_free(own);
        return SQLITE_NOMEM;
    }
    v->real = real;
    v->mutex = own;
    v->name = strdup(name);
    v->base.iVersion = 2;
    v->base.szOsFile = (int)sizeof(fault_file) + real->szOsFile;
    v->base.mxPathname = real->mxPathname;
    v->base.zName = v->name;
    v->base.xOpen = v_open;
    v->base.xDelete = v_delete;
    v->base.xAccess = v_access;
    v->base.xFullPathname = v_full_pathname;
    v->base.xDlOpen = v_dl_open;
    v->base.xDlError = v_dl_error;
    v->base.xDlSym = v_dl_sym;
    v->base.xDlClose = v_dl_close;
    v->base.xRandomness = v_randomness;
    v->base.xSleep = v_sleep;
    v->base.xCurrentTime = v_current_time;
    v->base.xGetLastError = v_get_last_error;
    v->base.xCurrentTimeInt64 = v_current_time_int64;
    rc = sqlite3_vfs_register(&v->base, 0);
    if (rc == SQLITE_OK) {
        v->next = registry;
        registry = v;
    } else {
        free(v->name);
        sqlite3_mutex_free(own);
        free(v);
    }
    sqlite3_mutex_leave(mutex);
    return rc;
}

int strata_fault_vfs_arm(const char *name, int method, uint64_t nth, int code, int persistent) {
    fault_vfs *v = find(name);
    if (!v || method < 0 || method >= STRATA_FAULT_METHODS) return -1;
    LOCKED(v, {
        v->armed = 1;
        v->method = method;
        v->nth = nth;
        v->code = code;
        v->persistent = persistent;
        v->armed_at = v->calls[method];
    });
    return 0;
}

int strata_fault_vfs_disarm(const char *name) {
    fault_vfs *v = find(name);
    if (!v) return -1;
    LOCKED(v, { v->armed = 0; });
    return 0;
}

int strata_fault_vfs_read(const char *name, strata_fault_vfs_state *out) {
    fault_vfs *v = find(name);
    if (!v) return -1;
    LOCKED(v, {
        memcpy(out->calls, v->calls, sizeof v->calls);
        out->faults = v->faults;
        out->last_sync_ns = v->last_sync_ns;
        out->pending_changes = 0;
        for (journal *j = v->journals; j; j = j->next) out->pending_changes += j->count;
    });
    return 0;
}

int strata_fault_vfs_freeze(const char *name) {
    fault_vfs *v = find(name);
    if (!v) return -1;
    LOCKED(v, { v->frozen = 1; });
    return 0;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int write_all(int fd, const unsigned char *bytes, sqlite3_int64 length, sqlite3_int64 offset) {
    while (length > 0) {
        ssize_t n = pwrite(fd, bytes, (size_t)length, offset);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        bytes += n;
        length -= n;
        offset += n;
    }
    return 0;
}

/// Undoes every change of `j` (newest first), then applies the ones the dice keep.
static int rewrite(journal *j, int torn, uint64_t *rng, strata_fault_vfs_cut *out) {
    int fd = open(j->path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : errno;   // deleted since: nothing to restore
    int err = 0;
    for (size_t i = j->count; i-- > 0 && !err;) {
        change *c = &j->changes[i];
        if (c->kind == CHANGE_WRITE) {
            err = write_all(fd, c->undo, c->undo_len, c->offset);
            if (!err && ftruncate(fd, c->size_before) != 0) err = errno;
        } else {
            if (ftruncate(fd, c->size_before) != 0) err = errno;
            if (!err) err = write_all(fd, c->undo, c->undo_len, c->offset);
        }
    }
    out->changes += j->count;
    for (size_t i = 0; torn && i < j->count && !err; i++) {
        change *c = &j->changes[i];
        uint64_t dice = splitmix(rng) % 3;   // 0 lost, 1 whole, 2 torn
        if (dice == 0) continue;
        if (c->kind == CHANGE_TRUNCATE) {   // one metadata update: all or nothing
            if (ftruncate(fd, c->offset) != 0) err = errno;
            out->kept++;
            continue;
        }
        if (dice == 1) {
            err = write_all(fd, c->data, c->amount, c->offset);
            out->kept++;
            continue;
        }
        // Torn: each 512-byte sector the write covers (aligned to the file) kept or lost.
        sqlite3_int64 end = c->offset + c->amount;
        for (sqlite3_int64 from = c->offset; from < end && !err;) {
            sqlite3_int64 to = (from / SECTOR + 1) * SECTOR;
            if (to > end) to = end;
            if (splitmix(rng) & 1) err = write_all(fd, c->data + (from - c->offset), to - from, from);
            from = to;
        }
        out->torn++;
    }
    close(fd);
    out->files++;
    return err;
}

int strata_fault_vfs_power_loss(const char *name, int torn, uint64_t seed, strata_fault_vfs_cut *out) {
    fault_vfs *v = find(name);
    if (!v) return -1;
    memset(out, 0, sizeof *out);
    uint64_t rng = seed;
    int err = 0;
    LOCKED(v, {
        for (journal *j = v->journals; j && !err; j = j->next) {
            if (j->created) {
                if (unlink(j->path) == 0) out->vanished++;
                else if (errno != ENOENT) err = errno;
            } else if (j->count > 0) {
                err = rewrite(j, torn, &rng, out);
            }
        }
        for (journal *j = v->journals; j; j = j->next) {
            free_changes(j);
            j->created = 0;
        }
        v->frozen = 0;
    });
    return err;
}

int strata_fault_vfs_reset(const char *name) {
    fault_vfs *v = find(name);
    if (!v) return -1;
    LOCKED(v, {
        for (journal *j = v->journals; j; j = j->next) {
            free_changes(j);
            j->created = 0;
        }
        memset(v->calls, 0, sizeof v->calls);
        v->faults = 0;
        v->last_sync_ns = 0;
        v->armed = 0;
        v->frozen = 0;
    });
    return 0;
}

/* A 32-bit stat() must see files over 2 GiB; realpath() is X/Open. */
#define _XOPEN_SOURCE 700
#define _FILE_OFFSET_BITS 64
#include "core/outfile.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/path.h"

#include <fcntl.h>
#if defined(_WIN32)
#include <io.h>
#include <process.h>
#include <windows.h>
#define getpid _getpid
#else
#include <unistd.h>
#endif

/* ---- identity: the same file by device and inode -------------------------- */

typedef struct {
    unsigned long long dev, ino;
    int regular; /* a regular file (a device or pipe: 0) */
} file_id;

/* 1 and *id if path names an existing file (links followed). */
static int id_of(const char *path, file_id *id) {
#if defined(_WIN32)
    wchar_t w[ML_WPATH_MAX];
    if (!ml_path_wide(path, w, ML_WPATH_MAX)) return 0;
    HANDLE h = CreateFileW(w, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS, NULL);
    if (h == INVALID_HANDLE_VALUE) return 0;
    BY_HANDLE_FILE_INFORMATION fi;
    int ok = GetFileInformationByHandle(h, &fi) != 0;
    CloseHandle(h);
    *id = (file_id){fi.dwVolumeSerialNumber, ((unsigned long long)fi.nFileIndexHigh << 32) | fi.nFileIndexLow, 1};
    return ok;
#else
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    *id = (file_id){(unsigned long long)st.st_dev, (unsigned long long)st.st_ino, S_ISREG(st.st_mode) != 0};
    return 1;
#endif
}

ml_status ml_outfile_check(const char *what, const char *path, const ml_named_path *inputs, int n,
                           ml_err *err) {
    file_id out, in;
    if (!path || !id_of(path, &out)) return ML_OK; /* a new file is no input */
    for (int i = 0; i < n; i++) {
        if (!inputs[i].path || !id_of(inputs[i].path, &in)) continue;
        if (in.dev == out.dev && in.ino == out.ino)
            return ml_errf(err, ML_E_ARG,
                           "%s '%s' is the same file as %s '%s'; refusing to write over an input", what, path,
                           inputs[i].what, inputs[i].path);
    }
    return ML_OK;
}

/* ---- open: a temporary beside the target, or the device itself ----------- */

/* Write through to a device, FIFO or socket; refuse what is not a file. */
typedef enum { KIND_NEW, KIND_REGULAR, KIND_THROUGH, KIND_REFUSED } out_kind;

static out_kind kind_of(const char *path, const char **why) {
#if defined(_WIN32)
    /* The wide-char API (a UTF-8 path: the narrow stat() would not find
     * "dossier é" and replace the folder at the end of the run), and the
     * handle's type for devices (NUL, which stat() does not know). */
    wchar_t w[ML_WPATH_MAX];
    if (!ml_path_wide(path, w, ML_WPATH_MAX)) return KIND_NEW; /* create_new says why not */
    DWORD attr = GetFileAttributesW(w);
    if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY)) {
        *why = "a directory";
        return KIND_REFUSED;
    }
    HANDLE h = CreateFileW(w, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS, NULL);
    if (h == INVALID_HANDLE_VALUE) return attr == INVALID_FILE_ATTRIBUTES ? KIND_NEW : KIND_REGULAR;
    DWORD type = GetFileType(h);
    CloseHandle(h);
    if (type == FILE_TYPE_DISK) return KIND_REGULAR;
    if (type == FILE_TYPE_CHAR || type == FILE_TYPE_PIPE) return KIND_THROUGH;
    *why = "not a regular file, device or pipe";
    return KIND_REFUSED;
#else
    struct stat st;
    if (stat(path, &st) != 0) return KIND_NEW;
    if (S_ISREG(st.st_mode)) return KIND_REGULAR;
    if (S_ISDIR(st.st_mode)) *why = "a directory";
#if defined(S_ISCHR) && defined(S_ISFIFO)
    else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return KIND_THROUGH;
#endif
#if defined(S_ISSOCK)
    else if (S_ISSOCK(st.st_mode)) return KIND_THROUGH;
#endif
#if defined(S_ISBLK)
    else if (S_ISBLK(st.st_mode)) *why = "a block device";
#endif
    else *why = "not a regular file, device or pipe";
    return KIND_REFUSED;
#endif
}

/* Into out (ML_OUTFILE_PATH_MAX): the file a link points to (renamed
 * over, so the link stays), also when it does not exist yet (a dangling
 * link: up to 8 links deep, each relative to its own directory), the path
 * itself otherwise. 0 if too long. */
static int resolve(const char *path, char *out) {
    size_t n = strlen(path);
    if (n >= ML_OUTFILE_PATH_MAX) return 0;
    memcpy(out, path, n + 1);
#if !defined(_WIN32) && defined(PATH_MAX) && PATH_MAX <= ML_OUTFILE_PATH_MAX
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return 1;
    if (realpath(path, out)) return 1;
    memcpy(out, path, n + 1);
    for (int hop = 0; hop < 8 && lstat(out, &st) == 0 && S_ISLNK(st.st_mode); hop++) {
        char link[ML_OUTFILE_PATH_MAX];
        ssize_t k = readlink(out, link, sizeof link - 1);
        if (k <= 0) break;
        link[k] = 0;
        const char *slash = strrchr(out, '/');
        size_t dir = link[0] == '/' || !slash ? 0 : (size_t)(slash - out) + 1; /* keep "dir/" */
        if (dir + (size_t)k >= ML_OUTFILE_PATH_MAX) return 0;
        memcpy(out + dir, link, (size_t)k + 1);
    }
#endif
    return 1;
}

/* /dev/stdout, /dev/stderr, /dev/fd/N and /proc/<pid or self>/fd/N may lead
 * to a regular file the shell opened for us: that one is written through,
 * not replaced. Any other regular file, under /dev/shm say, is replaced. */
static int is_fd_alias(const char *path) {
    if (!strcmp(path, "/dev/stdout") || !strcmp(path, "/dev/stderr") || !strncmp(path, "/dev/fd/", 8)) return 1;
    if (strncmp(path, "/proc/", 6)) return 0;
    const char *p = path + 6;
    if (!strncmp(p, "self", 4)) p += 4;
    else while (*p >= '0' && *p <= '9') p++;
    return p > path + 6 && !strncmp(p, "/fd/", 4);
}

/* Into out: the directory part of path made absolute (links resolved), a
 * slash and the last part; 0 if the directory does not exist or the
 * result would not fit. */
static int canonical_name(const char *name, char *out, size_t cap) {
#if !defined(_WIN32) && defined(PATH_MAX)
    char path[ML_OUTFILE_PATH_MAX];
    if (!resolve(name, path)) return 0;
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX], real[PATH_MAX];
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (n >= sizeof dir) return 0;
    if (slash) memcpy(dir, n ? path : "/", n ? n : 1), dir[n ? n : 1] = 0;
    else strcpy(dir, ".");
    return realpath(dir, real) && (size_t)snprintf(out, cap, "%s/%s", real, slash ? slash + 1 : path) < cap;
#else
    return (size_t)snprintf(out, cap, "%s", name) < cap;
#endif
}

int ml_outfile_same(const char *a, const char *b) {
    if (is_fd_alias(a) || is_fd_alias(b)) return 0; /* written through, whatever file the shell opened */
    file_id ia, ib;
    const int ea = id_of(a, &ia), eb = id_of(b, &ib);
    if (ea || eb) return ea && eb && ia.regular && ia.dev == ib.dev && ia.ino == ib.ino;
    char ca[ML_OUTFILE_PATH_MAX], cb[ML_OUTFILE_PATH_MAX];
    if (!canonical_name(a, ca, sizeof ca) || !canonical_name(b, cb, sizeof cb)) return !strcmp(a, b);
    return !strcmp(ca, cb);
}

/* ---- the temporaries being written, for a signal handler ------------------ */

/* A slot per open temporary (more at once go unlisted): claimed by
 * compare-and-swap (the library may open outputs in several threads), its
 * path written, then published. ml_outfile_remove_temporaries only reads. */
#define LIVE_MAX 8
enum { SLOT_FREE, SLOT_CLAIMED, SLOT_LIVE };
static atomic_int live_state[LIVE_MAX];
static char live_path[LIVE_MAX][ML_OUTFILE_PATH_MAX];

static int live_add(const char *path) {
    for (int i = 0; i < LIVE_MAX; i++) {
        int expect = SLOT_FREE;
        if (atomic_compare_exchange_strong(&live_state[i], &expect, SLOT_CLAIMED)) {
            memcpy(live_path[i], path, strlen(path) + 1);
            atomic_store(&live_state[i], SLOT_LIVE);
            return i;
        }
    }
    return -1;
}

static void live_drop(int slot) {
    if (slot >= 0) atomic_store(&live_state[slot], SLOT_FREE);
}

void ml_outfile_remove_temporaries(void) {
    for (int i = 0; i < LIVE_MAX; i++)
        if (atomic_load(&live_state[i]) == SLOT_LIVE) {
#if defined(_WIN32)
            ml_remove(live_path[i]); /* the console's handler thread: a UTF-8 name, as created */
#else
            unlink(live_path[i]); /* async-signal-safe */
#endif
        }
}

/* A file that did not exist (O_EXCL: never a user's file), open to write. */
static FILE *create_new(const char *path) {
#if defined(_WIN32)
    wchar_t w[ML_WPATH_MAX];
    if (!ml_path_wide(path, w, ML_WPATH_MAX)) return NULL;
    int fd = _wopen(w, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
    FILE *f = fd < 0 ? NULL : _fdopen(fd, "wb");
    if (fd >= 0 && !f) _close(fd);
#else
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (fd >= 0 && !f) close(fd);
#endif
    return f;
}

ml_status ml_outfile_open(ml_outfile *o, const char *what, const char *path, ml_err *err) {
    *o = (ml_outfile){.path = path, .live = -1};
    const char *why = NULL;
    out_kind k = kind_of(path, &why);
    if (k == KIND_REFUSED)
        return ml_errf(err, ML_E_IO, "%s: cannot write '%s': it is %s; expected a file, or a device or pipe to write through",
                       what, path, why);
#if !defined(_WIN32)
    /* No write permission at all: the user protected it (as the shell's >
     * would refuse, rm would ask); a rename would replace it regardless. */
    struct stat ps;
    if (k == KIND_REGULAR && !is_fd_alias(path) && stat(path, &ps) == 0 && !(ps.st_mode & 0222))
        return ml_errf(err, ML_E_IO, "%s: '%s' is write-protected (mode %04o); not replacing it", what, path,
                       (unsigned)(ps.st_mode & 07777));
#endif
    if (k == KIND_THROUGH || (k == KIND_REGULAR && is_fd_alias(path))) {
        o->through = 1;
        o->f = ml_fopen(path, "ab"); /* never truncates: a device or the shell's own file */
        if (!o->f) return ml_errf(err, ML_E_IO, "%s: cannot write '%s': %s", what, path, strerror(errno));
        return ML_OK;
    }
    o->replaces = k == KIND_REGULAR;
    if (!resolve(path, o->target) || strlen(o->target) + 32 >= ML_OUTFILE_PATH_MAX)
        return ml_errf(err, ML_E_IO, "%s: cannot write '%s': the path is longer than %d bytes", what, path,
                       ML_OUTFILE_PATH_MAX - 32);
    /* A fresh name each try (process id, clock, try), created exclusively. */
    unsigned long seed = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);
    for (int tries = 0; tries < 100 && !o->f; tries++) {
        snprintf(o->tmp, sizeof o->tmp, "%s.part-%lx-%d", o->target, seed & 0xffffffffUL, tries);
        o->f = create_new(o->tmp);
        if (!o->f && errno != EEXIST) break;
    }
    o->live = o->f ? live_add(o->tmp) : -1;
    if (!o->f) {
        int e = errno;
        o->tmp[0] = 0;
        return ml_errf(err, ML_E_IO, "%s: cannot write '%s': %s (creating a temporary file beside it)", what, path,
                       strerror(e));
    }
#if !defined(_WIN32)
    struct stat st;
    if (o->replaces && stat(o->target, &st) == 0) fchmod(fileno(o->f), st.st_mode & 07777); /* keep its mode */
#endif
    return ML_OK;
}

/* ---- commit or abort ------------------------------------------------------- */

static int rename_over(const char *from, const char *to) {
#if defined(_WIN32)
    wchar_t wf[ML_WPATH_MAX], wt[ML_WPATH_MAX];
    if (!ml_path_wide(from, wf, ML_WPATH_MAX) || !ml_path_wide(to, wt, ML_WPATH_MAX)) return -1;
    if (MoveFileExW(wf, wt, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return 0;
    errno = ml_win_errno();
    return -1;
#else
    return rename(from, to);
#endif
}

ml_status ml_outfile_commit(ml_outfile *o, ml_err *err) {
    if (!o->f) return ml_errf(err, ML_E_IO, "'%s' is not open", o->path);
    FILE *f = o->f;
    o->f = NULL;
    int bad = fflush(f) != 0 || ferror(f);
    int e = errno;
#if !defined(_WIN32)
    /* On disk before the rename, so a crash leaves the old or the new file. */
    if (!bad && o->tmp[0] && fsync(fileno(f)) != 0 && errno != EINVAL) bad = 1, e = errno;
#endif
    if (fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (!bad && o->tmp[0] && rename_over(o->tmp, o->target) != 0) bad = 1, e = errno;
    if (bad) {
        ml_outfile_abort(o);
        return ml_errf(err, ML_E_IO, "writing '%s' failed: %s", o->path, e ? strerror(e) : "write error");
    }
    live_drop(o->live);
    o->live = -1;
    o->tmp[0] = 0;
    return ML_OK;
}

void ml_outfile_abort(ml_outfile *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) {
        ml_remove(o->tmp);
        live_drop(o->live); /* after: a signal between them finds the name gone, not the file left */
        o->live = -1;
    }
    o->tmp[0] = 0;
}

/* stat() and fopen() of files over 2 GiB in a 32-bit build, whatever the
 * build's flags (core/file.c does the same). */
#define _FILE_OFFSET_BITS 64
#include "core/path.h"

#include <sys/stat.h>
#include <sys/types.h>

#if defined(_WIN32)
#include <windows.h>

#include <errno.h>
#include <fcntl.h>
#include <io.h>

void ml_stdin_binary(void) { _setmode(_fileno(stdin), _O_BINARY); }

int ml_path_wide(const char *path, wchar_t *w, int cap) {
    return MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, cap) > 0;
}

FILE *ml_fopen(const char *path, const char *mode) {
    wchar_t wp[ML_WPATH_MAX], wm[8];
    if (!ml_path_wide(path, wp, ML_WPATH_MAX) || !ml_path_wide(mode, wm, 8)) return NULL;
    return _wfopen(wp, wm);
}

static int info(int rc, const struct _stat64 *s, ml_stat_t *st) {
    if (rc) return rc;
    *st = (ml_stat_t){(uint64_t)s->st_size, (s->st_mode & _S_IFMT) == _S_IFREG, (s->st_mode & _S_IFMT) == _S_IFDIR,
                      (long long)s->st_mtime, 0, (long long)s->st_ino};
    return 0;
}

int ml_stat(const char *path, ml_stat_t *st) {
    wchar_t wp[ML_WPATH_MAX];
    struct _stat64 s;
    if (!ml_path_wide(path, wp, ML_WPATH_MAX)) return errno = ENOENT, -1;
    return info(_wstat64(wp, &s), &s, st);
}

int ml_fstat(int fd, ml_stat_t *st) {
    struct _stat64 s;
    return info(_fstat64(fd, &s), &s, st);
}

int ml_remove(const char *path) {
    wchar_t wp[ML_WPATH_MAX];
    return ml_path_wide(path, wp, ML_WPATH_MAX) ? _wremove(wp) : -1;
}

int ml_win_errno(void) {
    switch (GetLastError()) {
    case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: case ERROR_INVALID_NAME: return ENOENT;
    case ERROR_ACCESS_DENIED: case ERROR_SHARING_VIOLATION: return EACCES;
    case ERROR_NOT_ENOUGH_MEMORY: case ERROR_COMMITMENT_LIMIT: return ENOMEM;
    default: return EIO;
    }
}

#else

FILE *ml_fopen(const char *path, const char *mode) { return fopen(path, mode); }

int ml_remove(const char *path) { return remove(path); }

static int info(int rc, const struct stat *s, ml_stat_t *st) {
    if (rc) return rc;
    *st = (ml_stat_t){(uint64_t)s->st_size, S_ISREG(s->st_mode) != 0, S_ISDIR(s->st_mode) != 0,
                      (long long)s->st_mtime, 0, (long long)s->st_ino};
#if defined(__linux__)
    st->mtime_ns = (long long)s->st_mtim.tv_nsec;
#endif
    return 0;
}

int ml_stat(const char *path, ml_stat_t *st) {
    struct stat s;
    return info(stat(path, &s), &s, st);
}

int ml_fstat(int fd, ml_stat_t *st) {
    struct stat s;
    return info(fstat(fd, &s), &s, st);
}

void ml_stdin_binary(void) {}

#endif

/* Files named by UTF-8 paths on every platform. Windows' narrow C API reads
 * paths in the ANSI code page (a model in "C:\Users\Zoë\模型" would not
 * open), so there every path goes through the wide-char API; elsewhere
 * these are the C library's own functions. */
#ifndef ML_PATH_H
#define ML_PATH_H

#include <stdint.h>
#include <stdio.h>

FILE *ml_fopen(const char *path, const char *mode);

/* What stat() tells of a file, with a 64-bit size whatever the caller's
 * off_t (32-bit Linux without _FILE_OFFSET_BITS=64 fails with EOVERFLOW past
 * 2 GiB; Windows' narrow stat() misses UTF-8 names and cuts st_size). */
typedef struct {
    uint64_t size;
    int is_reg, is_dir;
    long long mtime, mtime_ns, ino; /* mtime_ns: 0 where the system keeps none */
} ml_stat_t;
/* 0 and *st, or -1 and errno. */
int ml_stat(const char *path, ml_stat_t *st);
int ml_fstat(int fd, ml_stat_t *st);
int ml_remove(const char *path);

/* Read stdin as bytes: Windows' text mode turns CRLF into LF and ends the
 * input at a Ctrl-Z byte (a prompt piped to -f - would differ from the same
 * file given by name); elsewhere nothing to do. */
void ml_stdin_binary(void);

#if defined(_WIN32)
#include <wchar.h>
/* Longer than MAX_PATH: long paths work where the system allows them. */
#define ML_WPATH_MAX 4096
/* path as UTF-16 into w (cap wide chars); 0 if it is not UTF-8 or too long. */
int ml_path_wide(const char *path, wchar_t *w, int cap);

/* errno's nearest value for the last Windows error (for strerror). */
int ml_win_errno(void);
#endif

#endif

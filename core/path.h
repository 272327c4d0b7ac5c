/* Files named by UTF-8 paths on every platform. Windows' narrow C API reads
 * paths in the ANSI code page (a model in "C:\Users\Zoë\模型" would not
 * open), so there every path goes through the wide-char API; elsewhere
 * these are the C library's own functions. */
#ifndef ML_PATH_H
#define ML_PATH_H

#include <stdio.h>

FILE *ml_fopen(const char *path, const char *mode);
int ml_remove(const char *path);

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

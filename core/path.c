#include "core/path.h"

#if defined(_WIN32)
#include <windows.h>

#include <errno.h>

int ml_path_wide(const char *path, wchar_t *w, int cap) {
    return MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, cap) > 0;
}

FILE *ml_fopen(const char *path, const char *mode) {
    wchar_t wp[ML_WPATH_MAX], wm[8];
    if (!ml_path_wide(path, wp, ML_WPATH_MAX) || !ml_path_wide(mode, wm, 8)) return NULL;
    return _wfopen(wp, wm);
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

#endif

/* Read-only view of a whole file: mmap (POSIX), CreateFileMapping (Windows),
 * or a read into one aligned buffer (ML_NO_MMAP=1 builds, or use_mmap = 0).
 * The view's bytes are 64-byte aligned either way, so tensors can point
 * straight into it. */
#ifndef ML_FILE_H
#define ML_FILE_H

#include <stddef.h>

#include "core/status.h"

typedef struct {
    const unsigned char *data;
    size_t size;
    int mapped;    /* 1: data is a file mapping; 0: a heap copy */
    void *handle;  /* platform bookkeeping (Windows mapping handle) */
} ml_file;

/* Open path read-only. use_mmap = 0 forces the read fallback. */
ml_status ml_file_open(ml_file *f, const char *path, int use_mmap, ml_err *err);
void ml_file_close(ml_file *f);

#endif

/* Read-only view of a whole file: mmap (POSIX), CreateFileMapping (Windows),
 * or a read into one aligned buffer (ML_NO_MMAP=1 builds, or use_mmap = 0).
 * The view's bytes are 64-byte aligned either way, so tensors can point
 * straight into it. */
#ifndef ML_FILE_H
#define ML_FILE_H

#include <stddef.h>

#include "core/status.h"

typedef enum {
    ML_FILE_MAPPED,   /* a file mapping */
    ML_FILE_HEAP,     /* the file read into one aligned heap buffer */
    ML_FILE_BORROWED, /* the caller's buffer, left as it is */
    ML_FILE_TAKEN,    /* the caller's buffer, handed over: ours to rearrange (ml_bench's models) */
} ml_file_kind;

typedef struct {
    const unsigned char *data;
    size_t size;
    ml_file_kind kind;
    void *handle;  /* platform bookkeeping (Windows mapping handle) */
} ml_file;

/* use_mmap = ML_FILE_AUTO: read the file into memory when it takes at most
 * half of the memory the system reports available, else map it. */
#define ML_FILE_AUTO 2
/* ml_model_open_buffer's use_mmap = ML_FILE_TAKE: the buffer is handed over
 * (ML_FILE_TAKEN, ml_file_borrow). */
#define ML_FILE_TAKE 3

/* Open path read-only. use_mmap = 1 maps the file; 0 reads it into one
 * buffer, which on Linux asks for transparent huge pages: weights read
 * through a file mapping stream slower (4 KiB pages: TLB misses; see the
 * README's load section), so ML_FILE_AUTO reads whenever memory allows. */
ml_status ml_file_open(ml_file *f, const char *path, int use_mmap, ml_err *err);

/* View a caller-owned, 64-byte-aligned buffer as a file; close leaves it
 * alone. take: the caller hands its bytes over (ML_FILE_TAKEN: the loader
 * may rearrange the weights in place; the caller frees the buffer after
 * close and never reads it again), else ML_FILE_BORROWED. */
void ml_file_borrow(ml_file *f, const void *data, size_t size, int take);
void ml_file_close(ml_file *f);

/* "mapped", "read into memory" or "in memory". */
const char *ml_file_kind_name(ml_file_kind k);

#endif

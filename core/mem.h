/* Aligned heap blocks, one spelling for every platform: C11 aligned_alloc
 * and free, except on Windows, whose C library has no aligned_alloc (its
 * free() cannot release _aligned_malloc blocks, hence the pair). */
#ifndef ML_MEM_H
#define ML_MEM_H

#include <stddef.h>

/* size is rounded up to a multiple of align here (C11 requires it); align is
 * a power of two. NULL when the system refuses. */
void *ml_aligned_alloc(size_t align, size_t size);
void ml_aligned_free(void *p);

/* A block that is streamed whole (weights read into memory, a benchmark's
 * weights and buffers), freed by ml_aligned_free: from 2 MiB up, aligned
 * to 2 MiB and, on Linux, marked for transparent huge pages (THP's common
 * "madvise" mode backs nothing else with them), so reading it takes no TLB
 * miss per 4 KiB; smaller, ML_ALIGN-aligned. Not for the model's arena: its
 * KV cache fills position by position, and 2 MiB pages would make each of
 * its per-layer regions resident 2 MiB at a time. */
void *ml_large_alloc(size_t size);

/* Appended to a failed mapping or allocation of a model-sized block: in a
 * 32-bit process the address space (2-3 GiB usable) is the limit. */
#define ML_ADDR32_HINT \
    (sizeof(void *) < 8 ? " (a 32-bit process cannot hold it; use a 64-bit build)" : "")

#endif

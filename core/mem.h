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

/* Appended to a failed mapping or allocation of a model-sized block: in a
 * 32-bit process the address space (2-3 GiB usable) is the limit. */
#define ML_ADDR32_HINT \
    (sizeof(void *) < 8 ? " (a 32-bit process cannot hold it; use a 64-bit build)" : "")

#endif

/* madvise(MADV_HUGEPAGE) is a Linux extension beyond POSIX. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE
#endif
#include "core/mem.h"

#include <stdint.h>
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
#elif defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/quant.h"

void *ml_aligned_alloc(size_t align, size_t size) {
    if (size == 0) size = align;
    if (size > SIZE_MAX - (align - 1)) return NULL;
    size = (size + align - 1) / align * align;
#if defined(_WIN32)
    return _aligned_malloc(size, align);
#else
    return aligned_alloc(align, size);
#endif
}

void ml_aligned_free(void *p) {
#if defined(_WIN32)
    _aligned_free(p);
#else
    free(p);
#endif
}

void *ml_large_alloc(size_t size) {
    const size_t huge = (size_t)2 << 20;
    if (size < huge) return ml_aligned_alloc(ML_ALIGN, size);
    void *p = ml_aligned_alloc(huge, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    /* a hint (THP "madvise" mode, the common default): failure is harmless */
    if (p) madvise(p, (size + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    return p;
}

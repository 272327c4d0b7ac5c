#include "core/mem.h"

#include <stdint.h>
#include <stdlib.h>
#if defined(_WIN32)
#include <malloc.h>
#endif

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

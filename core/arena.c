#include "core/arena.h"

#include <stdint.h>

#include "core/mem.h"
#include "core/quant.h"

size_t ml_arena_round(size_t n) {
    if (n > SIZE_MAX - (ML_ALIGN - 1)) return SIZE_MAX;
    return (n + ML_ALIGN - 1) & ~(size_t)(ML_ALIGN - 1);
}

ml_status ml_arena_init(ml_arena *a, size_t cap, ml_err *err) {
    a->base = NULL;
    a->cap = a->used = 0;
    cap = ml_arena_round(cap);
    if (cap == SIZE_MAX)
        return ml_errf(err, ML_E_NOMEM, "arena: %zu bytes overflow size_t", cap);
    void *p = ml_aligned_alloc(ML_ALIGN, cap);
    if (!p) return ml_errf(err, ML_E_NOMEM, "arena: cannot allocate %zu bytes%s", cap, ML_ADDR32_HINT);
    a->base = p;
    a->cap = cap;
    return ML_OK;
}

void ml_arena_free(ml_arena *a) {
    ml_aligned_free(a->base);
    a->base = NULL;
    a->cap = a->used = 0;
}

void *ml_arena_alloc(ml_arena *a, size_t n) {
    size_t sz = ml_arena_round(n);
    if (sz == SIZE_MAX || sz > a->cap - a->used) return NULL;
    void *p = a->base + a->used;
    a->used += sz;
    return p;
}

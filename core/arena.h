/* One 64-byte-aligned allocation carved by a bump allocator. Every runtime
 * buffer (KV cache, activations, tables) comes from it, so after load the
 * process never allocates. */
#ifndef ML_ARENA_H
#define ML_ARENA_H

#include <stddef.h>

#include "core/status.h"

typedef struct {
    unsigned char *base;
    size_t cap, used;
} ml_arena;

/* Reserve cap bytes (rounded up to 64). ML_E_NOMEM when the system refuses. */
ml_status ml_arena_init(ml_arena *a, size_t cap, ml_err *err);
void ml_arena_free(ml_arena *a);

/* 64-byte-aligned block of n bytes, or NULL when the arena is full. Not
 * zeroed: pages are touched only when used, so a large KV cache costs
 * memory only as far as the context actually reaches. */
void *ml_arena_alloc(ml_arena *a, size_t n);

/* n rounded up to the arena alignment; SIZE_MAX when that overflows. */
size_t ml_arena_round(size_t n);

#endif

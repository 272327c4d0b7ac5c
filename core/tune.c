/* The kernels' run-time tuning (core/tune.h): relaxed atomics, as a
 * library's models may open on several threads while others run. */
#include "core/tune.h"

#include <stdatomic.h>

static atomic_int prefetch_l1, by_hand;

void ml_set_prefetch_l1(int on) {
    atomic_store_explicit(&by_hand, 1, memory_order_relaxed);
    atomic_store_explicit(&prefetch_l1, on != 0, memory_order_relaxed);
}

void ml_tune_prefetch_l1(int on) {
    if (!atomic_load_explicit(&by_hand, memory_order_relaxed))
        atomic_store_explicit(&prefetch_l1, on != 0, memory_order_relaxed);
}

int ml_prefetch_l1(void) { return atomic_load_explicit(&prefetch_l1, memory_order_relaxed); }

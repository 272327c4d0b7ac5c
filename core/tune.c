/* The kernels' run-time tuning (core/tune.h): relaxed atomics, as a
 * library's models may open on several threads while others run. */
#include "core/tune.h"

#include <stdatomic.h>

static atomic_int stream, by_hand;

static int valid(int mode) { return mode == ML_STREAM_L1 || mode == ML_STREAM_HW ? mode : ML_STREAM_L2; }

void ml_set_stream(int mode) {
    atomic_store_explicit(&by_hand, 1, memory_order_relaxed);
    atomic_store_explicit(&stream, valid(mode), memory_order_relaxed);
}

void ml_tune_stream(int mode) {
    if (!atomic_load_explicit(&by_hand, memory_order_relaxed))
        atomic_store_explicit(&stream, valid(mode), memory_order_relaxed);
}

int ml_stream(void) { return atomic_load_explicit(&stream, memory_order_relaxed); }

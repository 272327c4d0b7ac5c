/* ml_bench's memory read-bandwidth probe (--bw): the bound of a model that
 * does not fit in cache. nth threads read the slices of a buffer far
 * larger than any cache, one 8-byte word per 64-byte line. Every line still
 * crosses the memory bus whole, and the loop does almost nothing else, so
 * the figure is the memory system's, the same for every ISA build. Measured
 * next to each model figure, so the ratio of the two comes from one run on a
 * shared, noisy machine. */
#include <stdlib.h>
#include <string.h>

#include "app/bench.h"
#include "core/mem.h"
#include "app/cli.h"
#include "core/threads.h"

#define BW_BYTES ((size_t)1 << 30)

int ml_bench_bw_init(ml_bench_bw *bw) {
    bw->buf = ml_large_alloc(BW_BYTES);
    if (bw->buf) memset(bw->buf, 1, BW_BYTES); /* pages in before timing */
    return bw->buf != NULL;
}

void ml_bench_bw_free(ml_bench_bw *bw) {
    ml_aligned_free(bw->buf);
    bw->buf = NULL;
}

/* The buffer is BW_SLICES items for the pool; whoever runs a slice reads it. */
#define BW_SLICES 256
typedef struct { const uint64_t *buf; size_t lines; uint64_t sink[BW_SLICES]; } bw_task;

static void bw_run(void *ctx, int i0, int i1) {
    bw_task *t = ctx;
    for (int i = i0; i < i1; i++) {
        size_t l0 = t->lines * (size_t)i / BW_SLICES, l1 = t->lines * (size_t)(i + 1) / BW_SLICES;
        uint64_t a = 0, b = 0, c = 0, d = 0; /* 4 chains: the loads never wait on an add */
        size_t l = l0;
        for (; l + 4 <= l1; l += 4) a += t->buf[8 * l], b += t->buf[8 * l + 8], c += t->buf[8 * l + 16], d += t->buf[8 * l + 24];
        for (; l < l1; l++) a += t->buf[8 * l];
        t->sink[i] = a + b + c + d;
    }
}

/* After one warm-up pass; the best pass is the bound (what the memory can
 * deliver). */
double ml_bench_read_bandwidth(const ml_bench_bw *bw, int reps, int nth, double *med) {
    ml_pool *pool;
    ml_err err;
    if (!bw->buf || ml_pool_create(&pool, nth, &err)) return 0;
    bw_task t = {bw->buf, BW_BYTES / 64, {0}};
    double v[64];
    ml_pool_run(pool, bw_run, &t, BW_SLICES);
    for (int r = 0; r < reps; r++) {
        double t0 = ml_cli_now();
        ml_pool_run(pool, bw_run, &t, BW_SLICES);
        v[r] = (double)BW_BYTES / (ml_cli_now() - t0) / 1e9;
    }
    ml_pool_destroy(pool);
    ml_bench_stats st = ml_bench_summarize(v, reps);
    *med = st.med;
    return st.hi;
}

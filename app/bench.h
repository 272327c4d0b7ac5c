/* ml_bench's parts, one job per file (app/ml_bench.c is the command line):
 *   bench_measure.c  timing, medians, large aligned buffers
 *   bench_kernels.c  kernel figures at the matrix shapes of real models
 *   bench_bw.c       the memory read bandwidth (the bound of a large model)
 *   bench_model.c    model decode and prompt figures, for a .mlb or a named shape
 * Lines starting with "#row" (only with --rows) are for tools/bench_all.sh,
 * which sets builds side by side, and tools/bench_vs_llamacpp.py, which sets
 * us beside llama-bench. */
#ifndef ML_BENCH_H
#define ML_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "model/mlb_random.h"

typedef struct {
    const char *model_path, *shape; /* shape: a name of app/bench_shapes.h or "all" */
    int wtypes[2], n_wtypes;
    int threads[8], n_threads;
    int tokens, reps, kernels, model, use_mmap, bw;
    int rows; /* --rows: the machine-readable #row lines too */
    int f16_scales; /* --f16-scales: the random models and kernel matrices get fp16 block scales */
    int prompt, batch; /* -p: prompt tokens (0: no prompt figure); -b: prompt tokens per batch */
    int depth;         /* -d: decode after a context of this many tokens (0: from position 0) */
} ml_bench_opts;

/* ---- bench_measure.c ---- */
typedef struct { double med, lo, hi; } ml_bench_stats;

/* Median, min and max of v[0..n) (sorts v). */
ml_bench_stats ml_bench_summarize(double *v, int n);

/* Seconds per call of fn(ctx), timed over enough calls to last ~50 ms. */
double ml_bench_time_call(void (*fn)(void *ctx), void *ctx);

/* What is being measured, on stderr when it is a terminal (one line,
 * rewritten; NULL clears it): long runs show progress, pipes stay clean. */
void ml_bench_progress(const char *fmt, ...);

/* ---- bench_kernels.c: 0 or an exit code ---- */
int ml_bench_matvecs(const ml_bench_opts *o, int wtype, ml_rng *rng);
int ml_bench_vectors(const ml_bench_opts *o, ml_rng *rng);

/* ---- bench_bw.c ---- */
typedef struct { uint64_t *buf; } ml_bench_bw; /* buf: NULL when not measured */

/* The probe's buffer, paged in before any timing; 0 if no memory. */
int ml_bench_bw_init(ml_bench_bw *bw);
void ml_bench_bw_free(ml_bench_bw *bw);

/* The best GB/s of reps passes with nth threads (the median to *med); 0 if
 * the buffer or the threads cannot be had. */
double ml_bench_read_bandwidth(const ml_bench_bw *bw, int reps, int nth, double *med);

/* ---- bench_model.c: every selected model at every thread count; 0 or an exit code ---- */
int ml_bench_models(const ml_bench_opts *o, const ml_bench_bw *bw, ml_rng *rng);

#endif

/* A persistent pool of worker threads and a fork-join barrier (DESIGN §6,
 * THREADS=pthread builds only). The calling thread is worker 0; n-1
 * threads wait for work. A waiting worker spins briefly, because decode
 * issues a parallel region every few microseconds, then sleeps on a
 * condition variable: idle threads never burn a core. */
#ifndef ML_THREADS_H
#define ML_THREADS_H

#include "core/status.h"

/* Work item: run by every thread with its index ith in [0, nth). */
typedef void (*ml_task_fn)(void *ctx, int ith, int nth);

typedef struct ml_pool ml_pool;

/* n threads in total (n >= 1); the caller is one of them. */
ml_status ml_pool_create(ml_pool **out, int n, ml_err *err);
void ml_pool_destroy(ml_pool *p);
int ml_pool_size(const ml_pool *p);

/* Run fn on all threads and return when every one has finished. */
void ml_pool_run(ml_pool *p, ml_task_fn fn, void *ctx);

#endif

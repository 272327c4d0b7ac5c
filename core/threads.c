/* sched_getaffinity and CPU_COUNT are GNU extensions of <sched.h>. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "core/threads.h"

#if ML_HAS_THREADS

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/thread_os.h"

/* How long a waiter spins before it sleeps. Within a token the regions
 * are less than a microsecond apart; between tokens (sampling) tens of
 * microseconds. A worker spins through the first; it sleeps between tokens
 * and whenever the caller is descheduled, so that a spinning worker does
 * not keep a core, or its process's share of the machine, from a thread
 * that has work. The caller, waiting for ranges that workers took, sleeps
 * soon too: a long wait means a worker was descheduled mid-range, and an
 * idle core lets the OS move that worker onto it. */
#define WORKER_SPIN_NS 20000
#define CALLER_SPIN_NS 10000

/* The region state word: generation (bits 32-63), OPEN (bit 31: workers
 * may still join) and the number of workers inside the region (bits
 * 0-30). One word, so that joining checks and counts in one step. */
#define OPEN ((uint64_t)1 << 31)
#define COUNT_MASK (OPEN - 1)
#define GEN(s) ((uint32_t)((s) >> 32))

struct ml_pool {
    int n, started;
    ml_thread *tids;           /* (n); slot 0 is the calling thread's, unused */
    /* The current region: written by the caller before it opens the region,
     * read by the workers that joined it. */
    ml_task_fn fn;
    void *ctx;
    int n_items;
    atomic_int next;           /* first item not yet handed out */
    char pad[64];              /* takes and joins write different cache lines */
    _Alignas(8) _Atomic uint64_t state; /* generation | OPEN | joined workers */
    atomic_int sleepers;       /* threads blocked (or about to block) on a cond */
    atomic_int stop;
    ml_mutex mu;
    ml_cond wake;              /* new region, or stop */
    ml_cond done;              /* the last worker left a closed region */
};

/* ---- waiting ------------------------------------------------------------- */

typedef int (*wait_cond)(struct ml_pool *p, uint32_t arg);

/* Wait until cond holds: spin for spin_ns, then sleep on cv. `sleepers` is
 * changed and read with sequentially consistent atomics, as is the state
 * the waker changes, so the waker can skip the mutex when nobody sleeps
 * without ever losing a wakeup. */
static void wait_until(struct ml_pool *p, ml_cond *cv, wait_cond cond, uint32_t arg, int64_t spin_ns) {
    int64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        if (cond(p, arg)) return;
        ml_cpu_relax();
        /* The clock every 64 pauses: a few microseconds apart. */
        if ((i & 63) == 63) {
            int64_t t = ml_now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > spin_ns) break;
        }
    }
    ml_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    while (!cond(p, arg)) ml_cond_wait(cv, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    ml_mutex_unlock(&p->mu);
}

static void wake_all(struct ml_pool *p, ml_cond *cv) {
    if (atomic_load(&p->sleepers) == 0) return;
    ml_mutex_lock(&p->mu);
    ml_cond_broadcast(cv);
    ml_mutex_unlock(&p->mu);
}

static int new_region(struct ml_pool *p, uint32_t seen) {
    return GEN(atomic_load(&p->state)) != seen || atomic_load(&p->stop);
}

static int workers_out(struct ml_pool *p, uint32_t unused) {
    (void)unused;
    return (atomic_load(&p->state) & COUNT_MASK) == 0;
}

/* ---- sharing out the items ------------------------------------------------ */

/* Take the next range: half of what is left per thread (at least one
 * item), so ranges start large, which keeps the shared counter cold, and
 * end small, so threads that run at different speeds finish together. */
static int take(struct ml_pool *p, int *i0, int *i1) {
    int n = p->n_items, cur = atomic_load_explicit(&p->next, memory_order_relaxed);
    for (;;) {
        if (cur >= n) return 0;
        int len = (n - cur) / (2 * p->n);
        if (len < 1) len = 1;
        if (atomic_compare_exchange_weak_explicit(&p->next, &cur, cur + len, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *i0 = cur, *i1 = cur + len;
            return 1;
        }
    }
}

static void work(struct ml_pool *p) {
    int i0, i1;
    while (take(p, &i0, &i1)) p->fn(p->ctx, i0, i1);
}

/* ---- workers ---------------------------------------------------------------- */

/* Enter region `gen` if it is still open; the caller then waits for us. */
static int join(struct ml_pool *p, uint32_t gen) {
    uint64_t s = atomic_load(&p->state);
    while (GEN(s) == gen && (s & OPEN))
        if (atomic_compare_exchange_weak(&p->state, &s, s + 1)) return 1;
    return 0;
}

static void leave(struct ml_pool *p) {
    uint64_t s = atomic_fetch_sub(&p->state, 1) - 1;
    if ((s & COUNT_MASK) == 0 && !(s & OPEN)) wake_all(p, &p->done);
}

ML_THREAD_FN(worker_main, arg) {
    struct ml_pool *p = arg;
    uint32_t seen = 0;
    for (;;) {
        wait_until(p, &p->wake, new_region, seen, WORKER_SPIN_NS);
        if (atomic_load(&p->stop)) return ML_THREAD_END;
        seen = GEN(atomic_load(&p->state));
        if (join(p, seen)) {
            work(p);
            leave(p);
        }
    }
}

/* ---- the pool ---------------------------------------------------------------- */

ml_status ml_pool_create(ml_pool **out, int n, ml_err *err) {
    *out = NULL;
    if (n < 1) return ml_errf(err, ML_E_ARG, "threads: expected at least 1, got %d", n);
    struct ml_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->tids = calloc((size_t)n, sizeof *p->tids))) {
        free(p);
        return ml_errf(err, ML_E_NOMEM, "threads: cannot allocate a pool of %d", n);
    }
    p->n = n;
    ml_mutex_init(&p->mu);
    ml_cond_init(&p->wake);
    ml_cond_init(&p->done);
    for (p->started = 1; p->started < n; p->started++)
        if (ml_thread_start(&p->tids[p->started], worker_main, p) != 0) {
            int i = p->started;
            ml_pool_destroy(p);
            return ml_errf(err, ML_E_NOMEM, "threads: cannot start thread %d of %d", i + 1, n);
        }
    *out = p;
    return ML_OK;
}

void ml_pool_destroy(ml_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, 1);
    ml_mutex_lock(&p->mu);
    ml_cond_broadcast(&p->wake);
    ml_mutex_unlock(&p->mu);
    for (int i = 1; i < p->started; i++) ml_thread_join(p->tids[i]);
    ml_cond_destroy(&p->wake);
    ml_cond_destroy(&p->done);
    ml_mutex_destroy(&p->mu);
    free(p->tids);
    free(p);
}

int ml_pool_size(const ml_pool *p) { return p->n; }

void ml_pool_run(ml_pool *p, ml_task_fn fn, void *ctx, int n) {
    if (p->n == 1 || n <= 1) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n_items = n;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    /* Every worker has left the last region (count 0): open the next one,
     * which publishes fn, ctx, n_items and next to those that join it. */
    uint32_t gen = GEN(atomic_load(&p->state)) + 1;
    atomic_store(&p->state, (uint64_t)gen << 32 | OPEN);
    wake_all(p, &p->wake);
    work(p);
    /* Nothing is left to take: close the region to late comers and wait
     * for the ranges still running. */
    if (atomic_fetch_and(&p->state, ~OPEN) & COUNT_MASK)
        wait_until(p, &p->done, workers_out, 0, CALLER_SPIN_NS);
}

int ml_threads_default(void) {
    long n = ml_cpu_count();
    if (n < 1) n = 1;
    return n < ML_THREADS_DEFAULT_MAX ? (int)n : ML_THREADS_DEFAULT_MAX;
}

#else /* THREADS=1: the pool is the calling thread alone; no thread code. */

#include <stdlib.h>

#define ML_THREADS_STR_(a) #a
#define ML_THREADS_STR(a) ML_THREADS_STR_(a)
#define ML_THREADS_ISA_NAME ML_THREADS_STR(ML_ISA)

struct ml_pool {
    int n;
};

ml_status ml_pool_create(ml_pool **out, int n, ml_err *err) {
    static struct ml_pool single = {1};
    *out = NULL;
    if (n != 1)
        return ml_errf(err, ML_E_ARG,
                       "-t %d: this " ML_THREADS_ISA_NAME " build has no thread pool (made with THREADS=1): "
                       "use -t 1, or a build made without THREADS=1", n);
    *out = &single;
    return ML_OK;
}

void ml_pool_destroy(ml_pool *p) { (void)p; }

int ml_pool_size(const ml_pool *p) { return p->n; }

void ml_pool_run(ml_pool *p, ml_task_fn fn, void *ctx, int n) {
    (void)p;
    if (n > 0) fn(ctx, 0, n);
}

int ml_threads_default(void) { return 1; }

#endif

#include "core/threads.h"

#if defined(ML_THREADS_pthread)

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* A waiter first spins (a few microseconds: the gap between two parallel
 * regions of one token), then yields its core for a while, which keeps
 * oversubscribed pools (-t above the core count) moving, then sleeps. */
#define SPIN_LIMIT 4000
#define YIELD_LIMIT 200

typedef struct {
    struct ml_pool *p;
    int ith;
    pthread_t tid;
} worker;

struct ml_pool {
    int n, started;
    worker *workers;        /* (n); slot 0 is the calling thread */
    ml_task_fn fn;
    void *ctx;
    atomic_uint generation; /* bumped once per ml_pool_run */
    atomic_int pending;     /* workers still running the current task */
    atomic_int sleepers;    /* threads blocked (or about to block) on a cond */
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* new generation, or stop */
    pthread_cond_t done;    /* pending reached 0 */
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
    __asm__ __volatile__("yield");
#endif
}

/* Wait until cond holds: spin, then sleep on cv. `sleepers` is changed and
 * read with sequentially consistent atomics, as is the state the waker
 * changes, so the waker can skip the mutex when nobody sleeps without ever
 * losing a wakeup. */
static void wait_until(struct ml_pool *p, pthread_cond_t *cv, int (*cond)(struct ml_pool *, unsigned),
                       unsigned arg) {
    for (int i = 0; i < SPIN_LIMIT; i++) {
        if (cond(p, arg)) return;
        cpu_relax();
    }
    for (int i = 0; i < YIELD_LIMIT; i++) {
        if (cond(p, arg)) return;
        sched_yield();
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    while (!cond(p, arg)) pthread_cond_wait(cv, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
}

static void wake_all(struct ml_pool *p, pthread_cond_t *cv) {
    if (atomic_load(&p->sleepers) == 0) return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(&p->mu);
}

static int new_work(struct ml_pool *p, unsigned seen) {
    return atomic_load(&p->generation) != seen || atomic_load(&p->stop);
}

static int all_done(struct ml_pool *p, unsigned unused) {
    (void)unused;
    return atomic_load(&p->pending) == 0;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    struct ml_pool *p = w->p;
    unsigned seen = 0;
    for (;;) {
        wait_until(p, &p->wake, new_work, seen);
        if (atomic_load(&p->stop)) return NULL;
        seen = atomic_load(&p->generation);
        p->fn(p->ctx, w->ith, p->n);
        if (atomic_fetch_sub(&p->pending, 1) == 1) wake_all(p, &p->done);
    }
}

ml_status ml_pool_create(ml_pool **out, int n, ml_err *err) {
    *out = NULL;
    if (n < 1) return ml_errf(err, ML_E_ARG, "threads: expected at least 1, got %d", n);
    struct ml_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->workers = calloc((size_t)n, sizeof *p->workers))) {
        free(p);
        return ml_errf(err, ML_E_NOMEM, "threads: cannot allocate a pool of %d", n);
    }
    p->n = n;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (p->started = 1; p->started < n; p->started++) {
        worker *w = &p->workers[p->started];
        *w = (worker){.p = p, .ith = p->started};
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
            ml_pool_destroy(p);
            return ml_errf(err, ML_E_NOMEM, "threads: cannot start thread %d of %d", w->ith + 1, n);
        }
    }
    *out = p;
    return ML_OK;
}

void ml_pool_destroy(ml_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->started; i++) pthread_join(p->workers[i].tid, NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->workers);
    free(p);
}

int ml_pool_size(const ml_pool *p) { return p->n; }

void ml_pool_run(ml_pool *p, ml_task_fn fn, void *ctx) {
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->pending, p->n - 1);
    atomic_fetch_add(&p->generation, 1); /* publishes fn and ctx */
    wake_all(p, &p->wake);
    fn(ctx, 0, p->n);
    wait_until(p, &p->done, all_done, 0);
}

#else /* THREADS=1: the pool is the calling thread alone; no pthread code. */

#include <stdlib.h>

struct ml_pool {
    int n;
};

ml_status ml_pool_create(ml_pool **out, int n, ml_err *err) {
    static struct ml_pool single = {1};
    *out = NULL;
    if (n != 1)
        return ml_errf(err, ML_E_ARG,
                       "threads: this build has no thread pool (built with THREADS=1), got -t %d", n);
    *out = &single;
    return ML_OK;
}

void ml_pool_destroy(ml_pool *p) { (void)p; }

int ml_pool_size(const ml_pool *p) { return p->n; }

void ml_pool_run(ml_pool *p, ml_task_fn fn, void *ctx) {
    (void)p;
    fn(ctx, 0, 1);
}

#endif

/* The worker pool: in every region each item runs exactly once, in ranges
 * inside 0..n-1; regions follow each other without loss; a thread held up
 * inside its range does not hold up the other items (they are taken by the
 * threads that run); the default thread count is sane; a THREADS=1 build
 * refuses -t > 1. */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "core/threads.h"
#include "tests/testlib.h"

#define MAX_ITEMS 1000

typedef struct {
    atomic_int runs[MAX_ITEMS];
    atomic_int bad_ranges;
    int n;
} region;

static void count_task(void *ctx, int i0, int i1) {
    region *r = ctx;
    if (i0 < 0 || i1 > r->n || i0 >= i1) atomic_fetch_add(&r->bad_ranges, 1);
    for (int i = i0; i < i1 && i >= 0 && i < r->n; i++) atomic_fetch_add(&r->runs[i], 1);
}

/* The first range taken waits (up to 5 s) until every other item is done:
 * with rows dealt out in fixed shares, the stalled thread's share would
 * never be done and the wait would time out. */
typedef struct {
    atomic_int first, done, timed_out;
    int n;
} stall;

static void stall_task(void *ctx, int i0, int i1) {
    stall *s = ctx;
    if (atomic_exchange(&s->first, 0)) {
        time_t t0 = time(NULL); /* C's own clock: Windows has no clock_gettime */
        while (atomic_load(&s->done) != s->n - (i1 - i0))
            if (difftime(time(NULL), t0) > 5.0) {
                atomic_store(&s->timed_out, 1);
                break;
            }
    }
    atomic_fetch_add(&s->done, i1 - i0);
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
#if ML_HAS_THREADS
    int sizes[] = {1, 2, 3, 8};
#else
    int sizes[] = {1};
#endif
    static region r;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int nth = sizes[k], f0 = tl_failed;
        ml_pool *p;
        ml_err err = {{0}};
        CHECK(ml_pool_create(&p, nth, &err) == ML_OK, "create pool of %d: %s", nth, err.msg);
        if (!p) continue;
        CHECK(ml_pool_size(p) == nth, "pool size %d", ml_pool_size(p));
        int bad = 0;
        for (int rep = 0; rep < 2000; rep++) {
            static const int counts[] = {0, 1, 2, 7, 64, 1000};
            memset(&r, 0, sizeof r);
            r.n = counts[rep % 6];
            ml_pool_run(p, count_task, &r, r.n);
            if (atomic_load(&r.bad_ranges)) bad++;
            for (int i = 0; i < r.n; i++)
                if (atomic_load(&r.runs[i]) != 1) bad++;
        }
        CHECK(bad == 0, "pool of %d: %d items run twice, never, or outside 0..n-1", nth, bad);
        char name[96];
        snprintf(name, sizeof name, "pool of %d threads: 2000 regions of 0-1000 items, each item once", nth);
        GROUP_DONE(name, f0);

        if (nth > 1) {
            f0 = tl_failed;
            int timeouts = 0;
            for (int rep = 0; rep < 20; rep++) {
                stall s = {.first = 1, .n = 64};
                ml_pool_run(p, stall_task, &s, s.n);
                timeouts += atomic_load(&s.timed_out);
                CHECK(atomic_load(&s.done) == s.n, "pool of %d: %d of %d items done", nth, atomic_load(&s.done), s.n);
            }
            CHECK(timeouts == 0, "pool of %d: %d regions where a stalled range held up the other items", nth, timeouts);
            snprintf(name, sizeof name, "pool of %d threads: a stalled range does not hold up the others", nth);
            GROUP_DONE(name, f0);
        }
        ml_pool_destroy(p);
    }

    int d = ml_threads_default();
#if ML_HAS_THREADS
    CHECK(d >= 1 && d <= ML_THREADS_DEFAULT_MAX, "default thread count %d in 1..%d", d, ML_THREADS_DEFAULT_MAX);
#else
    CHECK(d == 1, "default thread count %d is 1 in a THREADS=1 build", d);
#endif
    GROUP_DONE("default thread count", 0);

    ml_pool *p = NULL;
    ml_err err = {{0}};
#if ML_HAS_THREADS
    CHECK(ml_pool_create(&p, 0, &err) == ML_E_ARG, "a pool of 0 threads is refused");
#else
    CHECK(ml_pool_create(&p, 2, &err) == ML_E_ARG && strstr(err.msg, "THREADS=1"),
          "THREADS=1 build refuses 2 threads naming the build option: %s", err.msg);
#endif
    GROUP_DONE("bad thread counts refused", 0);
    return tl_summary();
}

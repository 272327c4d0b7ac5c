/* The worker pool: every thread index runs exactly once per region, regions
 * follow each other without loss, and a THREADS=1 build refuses -t > 1. */
#include <stdatomic.h>
#include <string.h>

#include "core/threads.h"
#include "tests/testlib.h"

typedef struct {
    atomic_int calls;
    atomic_int seen[64];
    long sum[64];
    int nth_seen;
} region;

static void count_task(void *ctx, int ith, int nth) {
    region *r = ctx;
    atomic_fetch_add(&r->calls, 1);
    atomic_fetch_add(&r->seen[ith], 1);
    r->nth_seen = nth;
    /* Some work of uneven length, written to the thread's own slot. */
    long s = 0;
    for (int i = 0; i < 1000 * (ith + 1); i++) s += i ^ ith;
    r->sum[ith] = s;
}

int ml_main(int argc, char **argv) {
    (void)argc, (void)argv;
#if defined(ML_THREADS_pthread)
    int sizes[] = {1, 2, 3, 8};
#else
    int sizes[] = {1};
#endif
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int n = sizes[k], f0 = tl_failed;
        ml_pool *p;
        ml_err err = {{0}};
        CHECK(ml_pool_create(&p, n, &err) == ML_OK, "create pool of %d: %s", n, err.msg);
        if (!p) continue;
        CHECK(ml_pool_size(p) == n, "pool size %d", ml_pool_size(p));
        int bad = 0;
        for (int rep = 0; rep < 2000; rep++) {
            region r;
            memset(&r, 0, sizeof r);
            ml_pool_run(p, count_task, &r);
            if (atomic_load(&r.calls) != n || r.nth_seen != n) bad++;
            for (int i = 0; i < n; i++)
                if (atomic_load(&r.seen[i]) != 1 || r.sum[i] == 0) bad++;
        }
        CHECK(bad == 0, "pool of %d: %d regions where a thread ran twice, not at all, or late", n, bad);
        ml_pool_destroy(p);
        char name[64];
        snprintf(name, sizeof name, "pool of %d threads: 2000 regions, each index once", n);
        GROUP_DONE(name, f0);
    }
    ml_pool *p = NULL;
    ml_err err = {{0}};
#if defined(ML_THREADS_pthread)
    CHECK(ml_pool_create(&p, 0, &err) == ML_E_ARG, "a pool of 0 threads is refused");
#else
    CHECK(ml_pool_create(&p, 2, &err) == ML_E_ARG && strstr(err.msg, "THREADS=1"),
          "THREADS=1 build refuses 2 threads naming the build option: %s", err.msg);
#endif
    GROUP_DONE("bad thread counts refused", 0);
    return tl_summary();
}

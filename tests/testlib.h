/* A tiny test harness. Every test program (C, Python or shell) reports in the
 * same protocol: for humans, "ok - <what>" / "FAIL - <what>" / "SKIP - <what>:
 * <why>" lines and a last line "N passed, N failed, N skipped"; for
 * tests/run_tests.sh, the counts in the results file $ML_RESULTS (a TSV
 * "total" row; tests/results.sh describes the format).                    */
#ifndef ML_TESTLIB_H
#define ML_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>

static int tl_passed, tl_failed, tl_skipped;

/* One named check; on failure the message says what was expected. */
#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (cond) {                                                       \
            tl_passed++;                                                  \
        } else {                                                          \
            tl_failed++;                                                  \
            printf("FAIL - %s:%d: ", __FILE__, __LINE__);                 \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
        }                                                                 \
    } while (0)

#define SKIP(...)                                                         \
    do {                                                                  \
        tl_skipped++;                                                     \
        printf("SKIP - ");                                                \
        printf(__VA_ARGS__);                                              \
        printf("\n");                                                     \
    } while (0)

/* Print the group's verdict after a block of CHECKs. */
#define GROUP_DONE(name, failed_before)                                   \
    printf("%s - %s\n", tl_failed == (failed_before) ? "ok" : "FAIL", name)

static inline int tl_summary(void) {
    printf("%d passed, %d failed, %d skipped\n", tl_passed, tl_failed, tl_skipped);
    fflush(stdout);
    const char *path = getenv("ML_RESULTS");
    FILE *f = (path && *path) ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "total\t%d\t%d\t%d\t-\n", tl_passed, tl_failed, tl_skipped);
        fclose(f);
    }
    return tl_failed ? 1 : 0;
}

#endif

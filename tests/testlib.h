/* A tiny test harness. Every test program (C, Python or shell) reports in the
 * same protocol, which tests/run_tests.sh adds up:
 *   "ok - <what>" / "FAIL - <what>" / "SKIP - <what>: <why>" lines, and a
 *   last line "#summary passed=N failed=N skipped=N".                      */
#ifndef ML_TESTLIB_H
#define ML_TESTLIB_H

#include <stdio.h>

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
    printf("#summary passed=%d failed=%d skipped=%d\n", tl_passed, tl_failed, tl_skipped);
    fflush(stdout);
    return tl_failed ? 1 : 0;
}

#endif

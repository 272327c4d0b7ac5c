/* The forward pass's finiteness checks (model/forward_check.c) against
 * isfinite(): a row is refused exactly when one of its values is an
 * infinity or a NaN, and the message names the first such value. Lengths
 * around the checks' 8 lanes and the tail after them; every bad value at
 * every place; finite values at the edges of the exponent range (the
 * largest float, the smallest normal and subnormal, zeros of both signs),
 * which the exponent test must let through. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model/forward_check.h"
#include "tests/testlib.h"

enum { MAXN = 41 };

/* A float from its bits: the NaNs with a sign or a payload, which no
 * arithmetic spells. */
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* One check's verdict on x[0..n) against isfinite(): OK, or ML_E_FORMAT
 * naming the first value that is not finite (as "<name> <index> is") and
 * the position. */
static void judge(ml_status s, const ml_err *err, const float *x, int n, const char *name, int pos,
                  const char *what) {
    int first = -1;
    for (int i = 0; i < n && first < 0; i++)
        if (!isfinite(x[i])) first = i;
    char want[64], at[32];
    snprintf(want, sizeof want, "%s %d is ", name, first);
    snprintf(at, sizeof at, "position %d:", pos);
    if (first < 0)
        CHECK(s == ML_OK, "%s, %d values, all finite: %s refused (%s)", what, n, name, err->msg);
    else
        CHECK(s == ML_E_FORMAT && strstr(err->msg, want) && strstr(err->msg, at),
              "%s, %d values, the first not finite at %d: %s status %d, '%s'", what, n, first, name, (int)s,
              s ? err->msg : "");
}

static void expect(const float *x, int n, const char *what) {
    ml_err err = {0};
    ml_status s = ml_check_logits(x, n, 3, &err);
    judge(s, &err, x, n, "logit", 3, what);
    s = ml_check_residual(x, n, 5, &err);
    judge(s, &err, x, n, "residual element", 5, what);
}

static void test_edges_pass(void) {
    int before = tl_failed;
    const float edge[] = {FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, from_bits(1), from_bits(0x80000001u),
                          0.0f, -0.0f, from_bits(0x7F7FFFFFu), 1.0f};
    float x[MAXN];
    for (int n = 1; n <= MAXN; n++) {
        for (int i = 0; i < n; i++) x[i] = edge[(i + n) % (int)(sizeof edge / sizeof edge[0])];
        expect(x, n, "edges of the float range");
    }
    GROUP_DONE("finite values at the edges of the exponent range pass, at every length", before);
}

static void test_each_bad_value(void) {
    int before = tl_failed;
    const float bad[] = {INFINITY, -INFINITY, NAN, from_bits(0xFFC00000u), from_bits(0x7F800001u),
                         from_bits(0xFFFFFFFFu)};
    float x[MAXN];
    for (int n = 1; n <= MAXN; n++)
        for (int at = 0; at < n; at++)
            for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
                for (int i = 0; i < n; i++) x[i] = i % 2 ? FLT_MAX : -1.5f;
                x[at] = bad[b];
                expect(x, n, "one bad value");
                if (at + 1 < n) { /* a second one after it: the first is named */
                    x[n - 1] = bad[(b + 1) % (sizeof bad / sizeof bad[0])];
                    expect(x, n, "two bad values");
                }
            }
    GROUP_DONE("an infinity or NaN (any sign, any payload) at any place is refused, the first named", before);
}

/* A vocabulary's worth, as the forward pass checks every position. */
static void test_vocab_row(void) {
    int before = tl_failed;
    static float x[32000];
    for (int i = 0; i < 32000; i++) x[i] = (float)((i * 7919) % 2001 - 1000) * 0.01f;
    expect(x, 32000, "32000 logits");
    const int places[] = {0, 7, 8, 15999, 31991, 31999};
    for (size_t p = 0; p < sizeof places / sizeof places[0]; p++) {
        const float keep = x[places[p]];
        x[places[p]] = NAN;
        expect(x, 32000, "32000 logits, one NaN");
        x[places[p]] = keep;
    }
    GROUP_DONE("a 32000-logit row: all finite passes, one NaN anywhere is found", before);
}

int ml_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    test_edges_pass();
    test_each_bad_value();
    test_vocab_row();
    return tl_summary();
}

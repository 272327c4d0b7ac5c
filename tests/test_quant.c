/* The Q8_0 and Q4_0 formats (DESIGN §4, §7.2): what quantize_q8 promises
 * about its output, and the Q4_0 nibble layout of model/mlb.h as matvec_q4
 * reads it, against hand-computed values.
 *
 * Each check runs on the build's bound kernel (ml_k_quantize_q8 ->
 * ml_k_quantize_q8_<isa>) and, when that is a different symbol, on the
 * scalar twin too.
 *
 * Round-trip bound: |x - q*d| <= d * (0.5 + 1e-4). The 1e-4 covers float
 * rounding in id = 127/amax, x*id and d = amax/127 (together < 4e-5 of d for
 * |q| <= 127), including fl(x*id) = 0.5 - 2^-25 tying up to q = 1.
 *
 * Usage: test_quant [--seed=N] [--quick]  (or $ML_TEST_SEED, $ML_TEST_QUICK=1) */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/ml_config.h"
#include "tests/kernel_ref.h"
#include "tests/testlib.h"

#define ROUNDTRIP_SLACK 1e-4

typedef void (*quant_fn)(ml_qact *, const float *, int);
typedef void (*matvec_fn)(float *, const ml_qtensor *, const ml_qact *, int, int);

typedef struct {
    const char *name;
    quant_fn quant;
    matvec_fn mv_q4;
} impl;

/* ---- quantize helpers --------------------------------------------------- */

/* Quantize k values with f; returns a fresh activation (caller frees). */
static ml_qact quantize(quant_fn f, const float *x, int k) {
    ml_qact a = ref_qact(k);
    memset(a.q, 0x5A, (size_t)k); /* garbage: zero blocks must be written */
    for (int b = 0; b < k / ML_QK; b++) a.d[b] = -1.0f;
    f(&a, x, k);
    return a;
}

static float block_amax(const float *x) {
    float m = 0.0f;
    for (int j = 0; j < ML_QK; j++) m = fmaxf(m, fabsf(x[j]));
    return m;
}

/* The block's promises: q in [-127, 127]; d = amax/127 (or exactly +0 with
 * q = 0 below the threshold); the largest |x| maps to exactly +-127; every
 * element round-trips within d/2 (+ slack). Returns 0 and says why if not. */
static int block_ok(const float *x, const int8_t *q, float d, char *why, size_t len) {
    float amax = block_amax(x);
    if (!(amax >= ML_Q8_AMAX_MIN)) {
        for (int j = 0; j < ML_QK; j++)
            if (q[j] != 0) return snprintf(why, len, "amax %g below threshold but q[%d] = %d", (double)amax, j, q[j]), 0;
        if (!ref_same_bits(d, 0.0f)) return snprintf(why, len, "amax %g below threshold but d = %a", (double)amax, (double)d), 0;
        return 1;
    }
    if (!ref_same_bits(d, amax / 127.0f))
        return snprintf(why, len, "d = %a, expected amax/127 = %a", (double)d, (double)(amax / 127.0f)), 0;
    for (int j = 0; j < ML_QK; j++) {
        if (q[j] < -ML_Q8_MAX) /* int8 cannot exceed 127: -128 is the one bad value */
            return snprintf(why, len, "q[%d] = %d out of range", j, q[j]), 0;
        if (fabsf(x[j]) == amax && q[j] != (x[j] < 0 ? -ML_Q8_MAX : ML_Q8_MAX))
            return snprintf(why, len, "max element x[%d] = %g maps to %d, not +-127", j, (double)x[j], q[j]), 0;
        double err = fabs((double)x[j] - (double)q[j] * d);
        if (err > (double)d * (0.5 + ROUNDTRIP_SLACK))
            return snprintf(why, len, "x[%d] = %.9g -> q %d * d %.9g: error %.3g d", j, (double)x[j], q[j], (double)d,
                            err / d), 0;
    }
    return 1;
}

/* Quantize x (k values) and check every block. */
static int all_blocks_ok(const impl *im, const float *x, int k, char *why, size_t len) {
    ml_qact a = quantize(im->quant, x, k);
    int ok = 1;
    for (int b = 0; b < k / ML_QK && ok; b++) {
        ok = block_ok(x + b * ML_QK, a.q + b * ML_QK, a.d[b], why, len);
        if (!ok) {
            size_t used = strlen(why);
            snprintf(why + used, len - used, " (block %d)", b);
        }
    }
    ref_qact_free(&a);
    return ok;
}

/* ---- quantize: round trip on random data at every scale ----------------- */

static void test_roundtrip(const impl *im, ref_rng *rng, int quick) {
    int before = tl_failed;
    const float scales[] = {1e-29f, 1e-20f, 1e-7f, 1e-3f, 1.0f, 1e3f, 1e12f, 1e25f, 1e37f};
    const int k = 2048;
    float *x = ref_floats(k);
    char why[256];
    for (int si = 0; si < (int)(sizeof scales / sizeof scales[0]); si++)
        for (int rep = 0; rep < (quick ? 2 : 8); rep++) {
            for (int i = 0; i < k; i++) {
                /* alternate distributions: heavy centre, uniform, and blocks
                 * whose magnitudes span several decades */
                float v = rep % 3 == 0 ? ref_gauss(rng) : rep % 3 == 1 ? ref_uniform(rng, -1.0f, 1.0f)
                                                                       : ref_gauss(rng) * ldexpf(1.0f, ref_int(rng, -12, 0));
                x[i] = v * scales[si];
            }
            CHECK(all_blocks_ok(im, x, k, why, sizeof why), "%s round trip scale %g: %s", im->name,
                  (double)scales[si], why);
        }
    ref_free(x);
    char what[160];
    snprintf(what, sizeof what, "%s: round trip |x - q*d| <= d/2, d = amax/127, max -> +-127, scales 1e-29..1e37",
             im->name);
    GROUP_DONE(what, before);
}

/* ---- quantize: zero, tiny, denormal and negative-zero blocks ------------ */

static void test_zero_blocks(const impl *im, ref_rng *rng) {
    int before = tl_failed;
    float x[4 * ML_QK];
    char why[256];

    /* block 0 all +0, block 1 all -0, block 2 denormals, block 3 ordinary */
    for (int j = 0; j < ML_QK; j++) {
        x[j] = 0.0f;
        x[ML_QK + j] = -0.0f;
        x[2 * ML_QK + j] = (float)ref_int(rng, -1000, 1000) * (FLT_MIN / 8192.0f);
        x[3 * ML_QK + j] = ref_gauss(rng);
    }
    ml_qact a = quantize(im->quant, x, 4 * ML_QK);
    for (int b = 0; b < 3; b++) {
        int zero = 1;
        for (int j = 0; j < ML_QK; j++) zero &= a.q[b * ML_QK + j] == 0;
        CHECK(zero && ref_same_bits(a.d[b], 0.0f), "%s zero-like block %d (+0, -0, denormal): d = %a, q zero = %d",
              im->name, b, (double)a.d[b], zero);
    }
    CHECK(block_ok(x + 3 * ML_QK, a.q + 3 * ML_QK, a.d[3], why, sizeof why),
          "%s ordinary block after zero blocks: %s", im->name, why);
    ref_qact_free(&a);

    /* around the threshold: just below -> zero block, at it -> quantized */
    for (int j = 0; j < ML_QK; j++) {
        x[j] = ref_uniform(rng, -0.9f, 0.9f) * ML_Q8_AMAX_MIN;
        x[ML_QK + j] = ref_uniform(rng, -1.0f, 1.0f) * ML_Q8_AMAX_MIN;
    }
    x[ML_QK + 5] = -ML_Q8_AMAX_MIN;
    a = quantize(im->quant, x, 2 * ML_QK);
    CHECK(ref_same_bits(a.d[0], 0.0f), "%s block with amax < threshold: d = %a, expected 0", im->name, (double)a.d[0]);
    CHECK(a.d[1] > 0.0f && a.q[ML_QK + 5] == -ML_Q8_MAX &&
              block_ok(x + ML_QK, a.q + ML_QK, a.d[1], why, sizeof why),
          "%s block with amax = threshold: d = %a q = %d", im->name, (double)a.d[1], a.q[ML_QK + 5]);
    ref_qact_free(&a);

    /* negative zeros and denormals inside an ordinary block quantize to 0 */
    for (int j = 0; j < ML_QK; j++)
        x[j] = j % 3 == 0 ? -0.0f : j % 3 == 1 ? (float)ref_int(rng, -50, 50) * (FLT_MIN / 1024.0f) : ref_gauss(rng);
    x[2] = 1.5f;
    a = quantize(im->quant, x, ML_QK);
    int zeros = 1;
    for (int j = 0; j < ML_QK; j += 3) zeros &= a.q[j] == 0 && a.q[j + 1 < ML_QK ? j + 1 : j] == 0;
    CHECK(zeros && block_ok(x, a.q, a.d[0], why, sizeof why), "%s -0 and denormals in a normal block: %s", im->name,
          zeros ? why : "a -0 or denormal element is not 0");
    ref_qact_free(&a);

    char what[160];
    snprintf(what, sizeof what, "%s: all-zero, -0, denormal and sub-threshold blocks -> d = +0, q = 0", im->name);
    GROUP_DONE(what, before);
}

/* ---- quantize: clamp, outliers, round half away from zero --------------- */

static void test_rounding(const impl *im, ref_rng *rng) {
    int before = tl_failed;
    float x[ML_QK];
    char why[256];

    /* amax = 127 * 2^e: d = 2^e and id = 2^-e exactly, so x = (k + 0.5) 2^e
     * is an exact .5 step and must round away from zero: 2.5 -> 3,
     * -2.5 -> -3, 0.5 -> 1, -0.5 -> -1; integers map to themselves. */
    const int exps[] = {-90, -20, -1, 0, 3, 20, 90};
    for (int ei = 0; ei < (int)(sizeof exps / sizeof exps[0]); ei++) {
        float p = ldexpf(1.0f, exps[ei]);
        int bad = -1, got = 0, want = 0;
        for (int start = -127; start <= 126; start += ML_QK - 1) {
            x[0] = (start % 2 ? -127.0f : 127.0f) * p;
            for (int j = 1; j < ML_QK; j++) {
                int k = start + j - 1;
                if (k > 126) k = 126 - (k - 127);
                x[j] = j % 4 == 3 ? (float)k * p : ((float)k + 0.5f) * p;
            }
            ml_qact a = quantize(im->quant, x, ML_QK);
            for (int j = 0; j < ML_QK && bad < 0; j++) {
                double v = (double)x[j] / p; /* exact */
                want = (int)(v < 0 ? -floor(-v + 0.5) : floor(v + 0.5));
                if (a.q[j] != want) bad = j, got = a.q[j];
            }
            if (bad < 0 && !ref_same_bits(a.d[0], p)) bad = 99, got = 0, want = 0;
            ref_qact_free(&a);
            if (bad >= 0) break;
        }
        CHECK(bad < 0, "%s half steps at d = 2^%d: element %d -> %d, expected %d (away from zero)", im->name,
              exps[ei], bad, got, want);
    }

    /* explicit, with d = 1: 0.5 -> 1, -0.5 -> -1, 1.5 -> 2, -2.5 -> -3,
     * 126.5 -> 127. 0.49999997 (0.5 - 2^-25) -> 1 is the contract's float
     * formula, not exact rounding: fl(0.49999997 + 0.5) ties to even at 1.0
     * and every ISA must do the same; the error stays within d/2 + slack. */
    const float vals[] = {127.0f, 0.5f, -0.5f, 1.5f, -2.5f, 126.5f, -126.5f, 0.49999997f, -0.49999997f, 0.0f,
                          0.49999994f, -1.0f};
    const int want[] = {127, 1, -1, 2, -3, 127, -127, 1, -1, 0, 0, -1};
    const int nv = (int)(sizeof want / sizeof want[0]);
    for (int j = 0; j < ML_QK; j++) x[j] = j < nv ? vals[j] : 0.0f;
    ml_qact a = quantize(im->quant, x, ML_QK);
    for (int j = 0; j < nv; j++)
        CHECK(a.q[j] == want[j], "%s %g -> %d, expected %d", im->name, (double)vals[j], a.q[j], want[j]);
    ref_qact_free(&a);

    /* one huge value: it maps to +-127, the rest round to small q or 0 */
    for (int rep = 0; rep < 20; rep++) {
        for (int j = 0; j < ML_QK; j++) x[j] = ref_gauss(rng);
        int h = ref_int(rng, 0, ML_QK - 1);
        x[h] = rep % 2 ? -1e6f : 3e5f;
        a = quantize(im->quant, x, ML_QK);
        CHECK(a.q[h] == (rep % 2 ? -ML_Q8_MAX : ML_Q8_MAX) && block_ok(x, a.q, a.d[0], why, sizeof why),
              "%s outlier block: q[h] = %d: %s", im->name, a.q[h], why);
        ref_qact_free(&a);
    }

    /* every element at +-amax: all map to exactly +-127, never -128 */
    for (int j = 0; j < ML_QK; j++) x[j] = j % 3 ? 3.25f : -3.25f;
    a = quantize(im->quant, x, ML_QK);
    int clamp = 1;
    for (int j = 0; j < ML_QK; j++) clamp &= a.q[j] == (j % 3 ? ML_Q8_MAX : -ML_Q8_MAX);
    CHECK(clamp, "%s block of +-amax: not all +-127", im->name);
    ref_qact_free(&a);

    /* FLT_MAX-range values: no overflow in x*id */
    for (int j = 0; j < ML_QK; j++) x[j] = ref_uniform(rng, -1.0f, 1.0f) * 3e38f;
    x[7] = -FLT_MAX;
    a = quantize(im->quant, x, ML_QK);
    CHECK(a.q[7] == -ML_Q8_MAX && block_ok(x, a.q, a.d[0], why, sizeof why), "%s block near FLT_MAX: %s", im->name,
          why);
    ref_qact_free(&a);

    char what[160];
    snprintf(what, sizeof what, "%s: round half away from zero at exact .5 steps, clamp to +-127, outliers", im->name);
    GROUP_DONE(what, before);
}

/* ---- Q4_0 unpack through matvec_q4, hand-computed ----------------------- */

/* A (rows, K) Q4_0 matrix with every byte = fill and every d = 1, and an
 * activation with every q = xq and d = 1. */
static void q4_setup(ml_qtensor *W, ml_qact *x, int rows, int K, uint8_t fill, int8_t xq) {
    *W = ref_qtensor(ML_TYPE_Q4_0, rows, K);
    *x = ref_qact(K);
    memset(W->q, fill, (size_t)rows * (size_t)K / 2);
    for (int i = 0; i < rows * (K / ML_QK); i++) W->d[i] = 1.0f;
    memset(x->q, (uint8_t)xq, (size_t)K);
    for (int b = 0; b < K / ML_QK; b++) x->d[b] = 1.0f;
}

static void test_q4(const impl *im, ref_rng *rng) {
    int before = tl_failed;
    ml_qtensor W;
    ml_qact x;
    float y[8];

    /* 0x88: both nibbles 8, value 0 everywhere */
    q4_setup(&W, &x, 1, 32, 0x88, 100);
    im->mv_q4(y, &W, &x, 0, 1);
    CHECK(y[0] == 0.0f, "%s q4 bytes 0x88 (all values 0): y = %g", im->name, (double)y[0]);

    /* Byte j = (15-j) << 4 | j: elements 0..15 (low nibbles) are j - 8 =
     * -8..7, elements 16..31 (high nibbles) are 7 - j = 7..-8. */
    for (int j = 0; j < 16; j++) ((uint8_t *)W.q)[j] = (uint8_t)((15 - j) << 4 | j);
    /* x = 1 everywhere: sum(j-8) + sum(7-j) = -8 + -8 = -16 */
    memset(x.q, 1, 32);
    im->mv_q4(y, &W, &x, 0, 1);
    CHECK(y[0] == -16.0f, "%s q4 ramp . ones = %g, expected -16", im->name, (double)y[0]);
    /* x = 1 on elements 16..31 only: the high nibbles alone, -8 */
    memset(x.q, 0, 16);
    im->mv_q4(y, &W, &x, 0, 1);
    CHECK(y[0] == -8.0f, "%s q4 ramp . (0 x16, 1 x16) = %g, expected -8 (high nibbles = elements 16..31)", im->name,
          (double)y[0]);
    /* x[e] = e: sum_j j(j-8) + sum_j (16+j)(7-j) = 280 + (-528) = -248 */
    for (int e = 0; e < 32; e++) x.q[e] = (int8_t)e;
    im->mv_q4(y, &W, &x, 0, 1);
    CHECK(y[0] == -248.0f, "%s q4 ramp . (0..31) = %g, expected -248", im->name, (double)y[0]);
    /* scales: dw = 0.5, dx = 0.25 with x = 1: -16 * 0.125 = -2 */
    memset(x.q, 1, 32);
    W.d[0] = 0.5f;
    x.d[0] = 0.25f;
    im->mv_q4(y, &W, &x, 0, 1);
    CHECK(y[0] == -2.0f, "%s q4 ramp with dw 0.5, dx 0.25 = %g, expected -2", im->name, (double)y[0]);
    ref_qtensor_free(&W);
    ref_qact_free(&x);

    /* One-hot probes on random bytes: x = e_k reads element k alone, which
     * is byte k's low nibble (k < 16) or byte k-16's high nibble, minus 8. */
    q4_setup(&W, &x, 1, 32, 0, 0);
    for (int j = 0; j < 16; j++) ((uint8_t *)W.q)[j] = (uint8_t)ref_int(rng, 0, 255);
    int bad = -1;
    for (int k = 0; k < 32 && bad < 0; k++) {
        const uint8_t *bytes = (const uint8_t *)W.q;
        int want = (k < 16 ? bytes[k] & 0x0F : bytes[k - 16] >> 4) - 8;
        memset(x.q, 0, 32);
        x.q[k] = 1;
        im->mv_q4(y, &W, &x, 0, 1);
        if (y[0] != (float)want) bad = k, printf("#   element %d: got %g, expected %d\n", k, (double)y[0], want);
    }
    CHECK(bad < 0, "%s q4 one-hot probe of element %d", im->name, bad);
    ref_qtensor_free(&W);
    ref_qact_free(&x);

    /* Extremes: nibble 0 (-8) times x = -127 over 32 elements: 32512 */
    q4_setup(&W, &x, 1, 32, 0x00, -127);
    im->mv_q4(y, &W, &x, 0, 1);
    CHECK(y[0] == 32512.0f, "%s q4 all -8 . all -127 = %g, expected 32512", im->name, (double)y[0]);
    ref_qtensor_free(&W);
    ref_qact_free(&x);

    /* Placement of blocks and scales: 5 rows x 2 blocks, zero (0x88) except
     * row r block 1 = 0xFF (all 7) with d[r*2 + 1] = r + 1: y[r] = 7 * 32 *
     * (r + 1) = 224 (r + 1) for odd r, and 0 for even rows, which stay 0x88. */
    q4_setup(&W, &x, 5, 64, 0x88, 1);
    for (int r = 1; r < 5; r += 2) {
        memset((uint8_t *)W.q + (r * 2 + 1) * ML_Q4_BLOCK_BYTES, 0xFF, ML_Q4_BLOCK_BYTES);
        W.d[r * 2 + 1] = (float)(r + 1);
        W.d[r * 2] = 1000.0f; /* scale of a zero block: must not matter */
    }
    im->mv_q4(y, &W, &x, 0, 5);
    int place = 1;
    for (int r = 0; r < 5; r++) place &= y[r] == (r % 2 ? 224.0f * (float)(r + 1) : 0.0f);
    CHECK(place, "%s q4 block/scale placement: y = %g %g %g %g %g, expected 0 448 0 896 0", im->name, (double)y[0],
          (double)y[1], (double)y[2], (double)y[3], (double)y[4]);
    ref_qtensor_free(&W);
    ref_qact_free(&x);

    char what[160];
    snprintf(what, sizeof what, "%s: Q4_0 nibble layout (low = elem j, high = elem 16+j, value - 8), hand-computed",
             im->name);
    GROUP_DONE(what, before);
}

/* ---- main --------------------------------------------------------------- */

int ml_main(int argc, char **argv) {
    ref_opts o = ref_parse_opts(argc, argv);
    ref_rng rng = {o.seed};
    printf("# test_quant seed=0x%llx%s (rerun: --seed=0x%llx)\n", (unsigned long long)o.seed, o.quick ? " quick" : "",
           (unsigned long long)o.seed);
    printf("# binding: quantize_q8 -> %s, matvec_q4 -> %s\n", ML_STR(ml_k_quantize_q8), ML_STR(ml_k_matvec_q4));

    impl impls[2] = {{"bound", ml_k_quantize_q8, ml_k_matvec_q4},
                     {"scalar", ml_k_quantize_q8_scalar, ml_k_matvec_q4_scalar}};
    int n = strcmp(ML_STR(ml_k_quantize_q8), "ml_k_quantize_q8_scalar") == 0 &&
                    strcmp(ML_STR(ml_k_matvec_q4), "ml_k_matvec_q4_scalar") == 0
                ? 1
                : 2;
    for (int i = 0; i < n; i++) {
        test_roundtrip(&impls[i], &rng, o.quick);
        test_zero_blocks(&impls[i], &rng);
        test_rounding(&impls[i], &rng);
        test_q4(&impls[i], &rng);
    }
    return tl_summary();
}

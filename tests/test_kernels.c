/* Every kernel of the built ISA against its scalar twin, and every scalar
 * twin against plain double-precision math (DESIGN §7.1, STYLE point 9).
 *
 * The generic names (ml_k_matvec_q8, ...) are bound by config/ml_config.h to
 * whatever symbol this build's ISA provides, so this one file serves every
 * build; in the scalar build the ISA-vs-scalar checks compare the scalar
 * twin with itself and only the double-precision checks have teeth.
 *
 * ISA vs scalar: BIT-IDENTICAL for every kernel. kernels/canon.h fixes the
 * float operation order (no FMA, 8-lane sums, one exp, rows accumulated block
 * by block), so every build must reproduce the scalar twin's bits; that is
 * what makes every build write the same tokens.
 *
 * Scalar vs double-precision math (REF_REL = 1e-5, ref_close in
 * tests/kernel_ref.h):
 *   quantize_q8            the rounding rule, exactly
 *   dequant_row            d * value in float, exactly (one multiply)
 *   matvec, scales d = 1   exact: K <= 512 keeps every partial sum < 2^24,
 *                          so the float result must equal the int64 sum
 *   matvec, real scales    |got - ref| <= 1e-5 * max(|ref|, sum|terms|/16)
 *   dot_f32, axpy, rope    same rule; terms are the products being summed
 *   rmsnorm                1e-5 relative, floor 1e-30
 *   softmax                1e-5 relative, floor 1e-20
 *   silu_mul               1e-5 relative, floor 1e-6 * |u|
 * The sum|terms|/16 floor: a float sum moves by a few ulp of sum|terms|,
 * which relative to a result near 0 is unbounded.
 *
 * Every float kernel runs on a misaligned pointer (offset 1 float) as well
 * as an aligned one, with guard values after the end that must survive.
 *
 * Usage: test_kernels [--seed=N] [--quick]  (or $ML_TEST_SEED, $ML_TEST_QUICK=1) */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/ml_config.h"
#include "core/isa_check.h"
#include "core/pack.h"
#include "core/tune.h"
#include "kernels/canon.h"
#include "tests/kernel_ref.h"
#include "tests/testlib.h"

#define FLOOR_SUM (1.0 / 16)   /* of sum|terms|, for sums with cancellation */
#define GUARD 16               /* floats after each buffer that must survive */
#define SENTINEL (-7777.25f)   /* y rows outside [r0, r1) keep this */

typedef struct {
    ref_rng rng;
    int quick;
    ml_type stype; /* scale type of the weights the matvec, matmul and dequant groups make */
} tctx;

/* ---- bindings ----------------------------------------------------------- */

/* This build's fallback chain, lowest first (DESIGN §3), walked up the
 * registry's parent links (config/isas.txt), into buf. */
static const char *chain_of(const char *isa, char *buf, size_t len) {
    int b = ml_build_from_name(isa);
    if (b < 0 || len == 0) return "";
    const char *parent = ml_build_parent((ml_build)b);
    buf[0] = '\0';
    if (strcmp(parent, isa) != 0) chain_of(parent, buf, len);
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", used ? " " : "", isa);
    return buf;
}

/* 1 if word is one of the space-separated words of list. */
static int in_list(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

#define BINDING_ROW(ret, name, NAME, params) {#name, ML_STR(ml_k_##name)},

/* Print which symbol each generic name bound to, and check the binding: the
 * symbol's ISA is in this build's chain, and a non-scalar build binds at
 * least one kernel to its own folder. */
static void check_bindings(void) {
    static const char *const rows[][2] = {ML_KERNELS(BINDING_ROW)};
    char chain_buf[256];
    const char *chain = chain_of(ML_ISA_NAME, chain_buf, sizeof chain_buf);
    int own = 0, f0 = tl_failed;
    printf("# build ISA: %s, chain: %s\n", ML_ISA_NAME, chain);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const char *isa = rows[i][1] + strlen("ml_k_") + strlen(rows[i][0]) + 1;
        printf("# binding: %-11s -> %s\n", rows[i][0], rows[i][1]);
        CHECK(in_list(chain, isa), "%s bound to %s, outside the chain '%s'", rows[i][0], rows[i][1], chain);
        own += !strcmp(isa, ML_ISA_NAME);
    }
    CHECK(own > 0 || !strcmp(ML_ISA_NAME, "scalar"),
          "no kernel binds to the %s folder", ML_ISA_NAME);
    GROUP_DONE("bindings: every kernel resolves within this build's fallback chain", f0);
}

/* ---- buffers with guards ------------------------------------------------ */

/* n floats at a 64-byte aligned or deliberately misaligned (+1 float)
 * address, followed by GUARD sentinels; *base is what to free. */
static float *guarded(float **base, int n, int misalign) {
    *base = ref_floats((size_t)n + GUARD + 1);
    float *p = *base + misalign;
    for (int i = 0; i < GUARD; i++) p[n + i] = SENTINEL;
    return p;
}

static int guard_ok(const float *p, int n) {
    for (int i = 0; i < GUARD; i++)
        if (!ref_same_bits(p[n + i], SENTINEL)) return 0;
    return 1;
}

/* ---- quantize_q8: bit-identical to scalar ------------------------------- */

/* One block of a chosen kind; the kinds cover DESIGN §4's edge cases. */
enum { QB_GAUSS, QB_ZERO, QB_HUGE, QB_HALF, QB_NEAR_HALF, QB_NEGZERO, QB_DENORM,
       QB_DENORM_ONE, QB_EQUAL, QB_TINY, QB_KINDS };

static void fill_qblock(tctx *t, float *x, int kind, float scale) {
    ref_rng *r = &t->rng;
    switch (kind) {
    case QB_GAUSS:
        for (int j = 0; j < ML_QK; j++) x[j] = ref_gauss(r) * scale;
        break;
    case QB_ZERO:
        for (int j = 0; j < ML_QK; j++) x[j] = 0.0f;
        break;
    case QB_HUGE: /* one outlier: everything else rounds to small q or 0 */
        for (int j = 0; j < ML_QK; j++) x[j] = ref_gauss(r) * scale;
        x[ref_int(r, 0, ML_QK - 1)] = (ref_unit(r) < 0.5f ? -1e4f : 1e4f) * scale;
        break;
    case QB_HALF: { /* amax = 127 * 2^e, so id = 2^-e exactly and x*id = k + 0.5 */
        float p = ldexpf(1.0f, ref_int(r, -20, 20));
        for (int j = 0; j < ML_QK; j++) x[j] = ((float)ref_int(r, -127, 126) + 0.5f) * p;
        x[ref_int(r, 0, ML_QK - 1)] = (ref_unit(r) < 0.5f ? -127.0f : 127.0f) * p;
        break;
    }
    case QB_NEAR_HALF: { /* x*id within an ulp of k + 0.5: another way of
                          * forming id or x*id (1/d) rounds some q differently.
                          * Every 4th element aims at |x*id| = 0.5 - 2^-25,
                          * where fl(x*id) + 0.5 ties up to 1 but an FMA
                          * (exact x*id + 0.5) stays below 1. */
        float amax = ref_uniform(r, 0.5f, 2.0f) * scale, id = 127.0f / amax;
        for (int j = 0; j < ML_QK; j++) {
            if (j % 4 == 0) {
                float v = (float)((0.5 - ldexp(1.0, -25)) / (double)id);
                for (int n = ref_int(r, -3, 3); n; n += n > 0 ? -1 : 1) v = nextafterf(v, n > 0 ? 1.0f : 0.0f);
                x[j] = ref_unit(r) < 0.5f ? -v : v;
            } else {
                x[j] = (float)(((double)ref_int(r, -127, 126) + 0.5) / (double)id);
            }
        }
        x[ref_int(r, 0, ML_QK - 1)] = ref_unit(r) < 0.5f ? -amax : amax;
        break;
    }
    case QB_NEGZERO:
        for (int j = 0; j < ML_QK; j++) x[j] = ref_unit(r) < 0.5f ? -0.0f : ref_gauss(r) * scale;
        break;
    case QB_DENORM:
        for (int j = 0; j < ML_QK; j++) x[j] = (float)ref_int(r, -1000, 1000) * FLT_MIN / 4096.0f;
        break;
    case QB_DENORM_ONE:
        for (int j = 0; j < ML_QK; j++) x[j] = (float)ref_int(r, -1000, 1000) * FLT_MIN / 4096.0f;
        x[ref_int(r, 0, ML_QK - 1)] = 1.0f;
        break;
    case QB_EQUAL: /* every element at +-amax */
        for (int j = 0; j < ML_QK; j++) x[j] = ref_unit(r) < 0.5f ? -scale : scale;
        break;
    default: /* QB_TINY: around the zero-block threshold */
        for (int j = 0; j < ML_QK; j++) x[j] = ref_uniform(r, -3.0f, 3.0f) * ML_Q8_AMAX_MIN;
        break;
    }
}

static void test_quantize(tctx *t) {
    int before = tl_failed;
    const int ks[] = {32, 64, 96, 288, 768, 2048};
    const float scales[] = {1e-20f, 1e-3f, 1.0f, 37.5f, 1e4f, 1e30f};
    int nk = (int)(sizeof ks / sizeof ks[0]), ns = (int)(sizeof scales / sizeof scales[0]);
    int reps = t->quick ? 1 : 3;
    for (int rep = 0; rep < reps; rep++)
        for (int ki = 0; ki <= nk; ki++)
            for (int si = 0; si < ns; si++) {
                int k = ki < nk ? ks[ki] : ML_QK * ref_int(&t->rng, 1, 96);
                int nb = k / ML_QK;
                float *x = ref_floats((size_t)k);
                for (int b = 0; b < nb; b++)
                    fill_qblock(t, x + b * ML_QK, rep == 0 && b < QB_KINDS ? b : ref_int(&t->rng, 0, QB_KINDS - 1),
                                scales[si]);
                /* one spare block after the end: a kernel must not write it */
                ml_qact a = ref_qact(k + ML_QK), s = ref_qact(k + ML_QK);
                memset(a.q, 0x5A, (size_t)k + ML_QK);
                memset(s.q, 0x5A, (size_t)k + ML_QK);
                a.d[nb] = s.d[nb] = SENTINEL;
                ml_k_quantize_q8(&a, x, k);
                ml_k_quantize_q8_scalar(&s, x, k);
                int bad = -1;
                for (int i = 0; i < k && bad < 0; i++)
                    if (a.q[i] != s.q[i] || !ref_same_bits(a.d[i / ML_QK], s.d[i / ML_QK])) bad = i;
                CHECK(bad < 0, "quantize_q8 k=%d scale=%g: element %d: q=%d d=%a, scalar q=%d d=%a", k,
                      (double)scales[si], bad, bad < 0 ? 0 : a.q[bad], bad < 0 ? 0.0 : (double)a.d[bad / ML_QK],
                      bad < 0 ? 0 : s.q[bad], bad < 0 ? 0.0 : (double)s.d[bad / ML_QK]);
                int spill = 0;
                for (int i = k; i < k + ML_QK; i++) spill |= a.q[i] != 0x5A || s.q[i] != 0x5A;
                spill |= !ref_same_bits(a.d[nb], SENTINEL) || !ref_same_bits(s.d[nb], SENTINEL);
                CHECK(!spill, "quantize_q8 k=%d wrote past block %d", k, nb);
                ref_qact_free(&a);
                ref_qact_free(&s);
                ref_free(x);
            }
    GROUP_DONE("quantize_q8: bit-identical to scalar, edge blocks, no writes past k", before);
}

/* ---- matvec ------------------------------------------------------------- */

typedef void (*matvec_fn)(float *, const ml_qtensor *, const ml_qact *, int, int);

/* Weight/activation contents: real scales, all scales 1 (exact integer
 * results), scales 1 with quants at the extremes (+-127, nibbles 0/15)
 * to catch int16 saturation in pmaddubsw-style paths, or tiny scales whose
 * products dw * dx and terms are denormal (ARMv7 NEON would flush them:
 * kernels/canon.h rule A5; compared with the scalar twin only). */
enum { MV_SCALED, MV_UNIT, MV_EXTREME, MV_TINY };

/* W's fp32 scales rounded to fp16 in place (W->dh[i] overwrites bytes of
 * W->d[i / 2], already read); tiny scales become the half subnormals (with
 * denormal products dw * dx), and some edge halves are mixed in: zero, -0,
 * the largest half, the smallest and largest subnormal, the smallest normal,
 * negative scales (ggml's Q4_0 scales are often negative). */
static void fp16_scales(tctx *t, ml_qtensor *W, int mode) {
    static const uint16_t edge[] = {0x0000, 0x8000, 0x7BFF, 0x0001, 0x03FF, 0x0400, 0xFBFF, 0x8001, 0x3C00, 0xBC00};
    const size_t n = (size_t)W->rows * (size_t)(W->cols / ML_QK);
    for (size_t i = 0; i < n; i++) {
        float v = W->d[i];
        uint16_t h = mode == MV_TINY ? (uint16_t)ref_int(&t->rng, 1, 0x3FF) : ml_f32_to_f16(v);
        if (mode == MV_SCALED && ref_int(&t->rng, 0, 7) == 0)
            h = edge[ref_int(&t->rng, 0, (int)(sizeof edge / sizeof *edge) - 1)];
        else if (mode == MV_SCALED && ref_int(&t->rng, 0, 7) == 0)
            h = (uint16_t)(h | 0x8000);
        W->dh[i] = h;
    }
}

static void fill_matvec(tctx *t, ml_qtensor *W, ml_qact *x, int mode) {
    ref_rng *r = &t->rng;
    int K = W->cols, nb = K / ML_QK;
    size_t qbytes = (size_t)ml_quant_bytes((ml_type)W->type, (uint64_t)W->rows * (uint64_t)K);
    for (size_t i = 0; i < qbytes; i++) {
        if (W->type == ML_TYPE_Q4_0)
            W->q[i] = (int8_t)(mode == MV_EXTREME ? (ref_int(r, 0, 1) * 0x0F) | (ref_int(r, 0, 1) * 0xF0)
                                                  : ref_int(r, 0, 255));
        else
            W->q[i] = (int8_t)(mode == MV_EXTREME ? (ref_int(r, 0, 1) ? 127 : -127) : ref_int(r, -127, 127));
    }
    for (int i = 0; i < K; i++) x->q[i] = (int8_t)(mode == MV_EXTREME ? (ref_int(r, 0, 1) ? 127 : -127) : ref_int(r, -127, 127));
    /* real scales span two decades and include zero blocks (all-zero input) */
    for (size_t i = 0; i < (size_t)W->rows * (size_t)nb; i++)
        W->d[i] = mode == MV_TINY     ? ref_uniform(r, 1e-21f, 1e-18f)
                  : mode != MV_SCALED ? 1.0f
                  : ref_int(r, 0, 15) == 0 ? 0.0f : ref_uniform(r, 1e-3f, 1e-1f);
    for (int b = 0; b < nb; b++)
        x->d[b] = mode == MV_TINY     ? ref_uniform(r, 1e-21f, 1e-18f)
                  : mode != MV_SCALED ? 1.0f
                  : ref_int(r, 0, 15) == 0 ? 0.0f : ref_uniform(r, 1e-2f, 1.0f);
    W->stype = (uint8_t)t->stype;
    if (t->stype == ML_TYPE_F16) fp16_scales(t, W, mode);
}

/* y with sentinels in every row and GUARD floats after the last row. */
static void reset_y(float *y, int rows) {
    for (int i = 0; i < rows + GUARD; i++) y[i] = SENTINEL;
}

/* One matrix, one mode: full range against int64 / double, then sub-ranges
 * [r0, r1) that must leave every other row untouched. */
static void matvec_case(tctx *t, ml_type type, int rows, int K, int mode, matvec_fn isa, matvec_fn sc,
                        const char *name) {
    ml_qtensor W = ref_qtensor(type, rows, K);
    ml_qact x = ref_qact(K);
    fill_matvec(t, &W, &x, mode);
    float *yi = ref_floats((size_t)rows + GUARD), *ys = ref_floats((size_t)rows + GUARD);
    float *full_i = ref_floats((size_t)rows), *full_s = ref_floats((size_t)rows);
    int exact = mode == MV_UNIT || mode == MV_EXTREME;

    reset_y(yi, rows);
    reset_y(ys, rows);
    isa(yi, &W, &x, 0, rows);
    sc(ys, &W, &x, 0, rows);
    int bad_s = -1, bad_i = -1;
    double refv = 0.0;
    for (int r = 0; r < rows; r++) {
        double mag = 0.0;
        if (exact) {
            refv = (double)ref_matvec_int_row(&W, &x, r);
            if (bad_s < 0 && ys[r] != refv) bad_s = r;
            if (bad_i < 0 && yi[r] != refv) bad_i = r;
        } else {
            refv = ref_matvec_row(&W, &x, r, &mag);
            if (bad_s < 0 && mode == MV_SCALED && !ref_close(ys[r], refv, FLOOR_SUM * mag)) bad_s = r;
            if (bad_i < 0 && !ref_same_bits(yi[r], ys[r])) bad_i = r;
        }
        if (bad_s == r || bad_i == r) {
            printf("#   %s rows=%d K=%d mode=%d row %d: isa=%.9g scalar=%.9g ref=%.9g mag=%.3g\n", name, rows, K, mode,
                   r, (double)yi[r], (double)ys[r], refv, mag);
            /* name the usual cause: a block's int32 lanes converted to
             * float separately, so the error follows sum|products| */
            double absprod = ref_matvec_absprod(&W, &x, r);
            if (bad_i == r && !exact && fabs((double)yi[r] - ys[r]) <= 4.0 * ldexp(absprod, -24))
                printf("#   hint: error %.3g is within 4 ulp of sum|qw*qx|*dw*dx = %.3g but not of the block sums: the "
                       "kernel likely converts partial int32 lanes to float before summing each block (DESIGN §4 "
                       "wants one int32 sumi per block, then sum += (float)sumi * (dw*dx))\n",
                       fabs((double)yi[r] - ys[r]), absprod);
        }
    }
    CHECK(bad_s < 0, "%s scalar vs %s: rows=%d K=%d mode=%d first bad row %d", name, exact ? "int64" : "double",
          rows, K, mode, bad_s);
    CHECK(bad_i < 0, "%s %s vs scalar: rows=%d K=%d mode=%d first bad row %d", name, "bit-exact", rows,
          K, mode, bad_i);
    CHECK(guard_ok(yi, rows) && guard_ok(ys, rows), "%s rows=%d K=%d wrote past row %d", name, rows, K, rows);
    memcpy(full_i, yi, (size_t)rows * sizeof(float));
    memcpy(full_s, ys, (size_t)rows * sizeof(float));

    /* Sub-ranges, as threads split rows: the row result must not depend on
     * the split (scalar and ISA alike: bit for bit), and rows outside stay
     * untouched. */
    int ranges[8][2], nr = 0;
    ranges[nr][0] = 1, ranges[nr++][1] = rows;
    ranges[nr][0] = 0, ranges[nr++][1] = rows - 1;
    ranges[nr][0] = 1, ranges[nr++][1] = rows - 1;
    ranges[nr][0] = rows / 2, ranges[nr++][1] = rows / 2 + 1;
    ranges[nr][0] = rows / 2, ranges[nr++][1] = rows / 2; /* empty */
    ranges[nr][0] = ref_int(&t->rng, 0, rows - 1);
    ranges[nr][1] = ref_int(&t->rng, ranges[nr][0], rows), nr++;
    for (int i = 0; i < nr; i++) {
        int r0 = ranges[i][0], r1 = ranges[i][1];
        if (r0 > r1 || r1 > rows) continue;
        reset_y(yi, rows);
        reset_y(ys, rows);
        isa(yi, &W, &x, r0, r1);
        sc(ys, &W, &x, r0, r1);
        int outside = 0, split_s = 0, split_i = 0;
        for (int r = 0; r < rows; r++) {
            if (r < r0 || r >= r1) {
                outside |= !ref_same_bits(yi[r], SENTINEL) || !ref_same_bits(ys[r], SENTINEL);
                continue;
            }
            split_s |= !ref_same_bits(ys[r], full_s[r]);
            split_i |= !ref_same_bits(yi[r], full_i[r]);
        }
        outside |= !guard_ok(yi, rows) || !guard_ok(ys, rows);
        CHECK(!outside, "%s rows=%d K=%d [%d,%d): wrote outside the range", name, rows, K, r0, r1);
        CHECK(!split_s, "%s scalar rows=%d K=%d [%d,%d): differs from the full-range run", name, rows, K, r0, r1);
        CHECK(!split_i, "%s rows=%d K=%d [%d,%d): differs from the full-range run", name, rows, K, r0, r1);
    }
    ref_free(yi);
    ref_free(ys);
    ref_free(full_i);
    ref_free(full_s);
    ref_qtensor_free(&W);
    ref_qact_free(&x);
}

static void test_matvec(tctx *t, ml_type type, matvec_fn isa, matvec_fn sc, const char *name) {
    int before = tl_failed;
    /* 8480: 265 blocks, past the neon_dotprod matvec's chunks of 128 blocks
     * (dotprod_mv.h); around the avx512vnni matvec's chunks of 16 blocks:
     * 480 (15: 3 steps and a masked one), 512 (one chunk), 576 (a chunk and
     * 2 single blocks), 608 (a chunk, a masked step) */
    int ks[14] = {32, 64, 96, 288, 480, 512, 576, 608, 768, 2048, 8480}, nk = 11;
    /* 31 .. 257: around the row tiles (4 to 64 rows) and groups of 4 tiles
     * of SVE at 128 to 2048 bits; only with K <= 288 (time under qemu) */
    const int rows_list[] = {1, 2, 3, 4, 5, 7, 8, 13, 64, 31, 33, 129, 257};
    for (int i = 0; i < (t->quick ? 1 : 3); i++) ks[nk++] = ML_QK * ref_int(&t->rng, 1, 80);
    for (int ki = 0; ki < nk; ki++)
        for (int ri = 0; ri < (int)(sizeof rows_list / sizeof rows_list[0]); ri++) {
            int K = ks[ki], rows = rows_list[ri];
            /* quick mode: the big K only with a few row counts */
            if (t->quick && K >= 768 && rows != 5 && rows != 8 && rows != 13) continue;
            if (rows > 64 && K > 288) continue;
            matvec_case(t, type, rows, K, MV_SCALED, isa, sc, name);
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
            /* the other streaming modes (core/tune.h: the avx512vnni
             * matvec's read order and prefetches): the same bits; x86 only
             * (ARM has no such choice, and its rows run under qemu) */
            const int mode = ml_stream();
            for (int m = ML_STREAM_L2; m <= ML_STREAM_HW; m++) {
                if (m == mode) continue;
                ml_set_stream(m);
                matvec_case(t, type, rows, K, MV_SCALED, isa, sc, name);
            }
            ml_set_stream(mode);
#endif
            if (K <= 512) {
                matvec_case(t, type, rows, K, MV_UNIT, isa, sc, name);
                matvec_case(t, type, rows, K, MV_EXTREME, isa, sc, name);
                matvec_case(t, type, rows, K, MV_TINY, isa, sc, name);
            }
        }
    char what[160];
    snprintf(what, sizeof what,
             "%s: exact integer sums, 1e-5 with scales, denormal scales, row ranges, K and rows sweep, every streaming "
             "mode (x86)",
             name);
    GROUP_DONE(what, before);
}

/* ---- matmul ------------------------------------------------------------- */

typedef void (*matmul_fn)(float *, int, const ml_qtensor *, const ml_qbatch *, int, int);

/* One matrix, one mode, a batch of n_tok tokens. The scalar matmul against
 * the scalar matvec token by token (bit for bit: a batch must equal its
 * tokens run one at a time; the matvec is checked against int64 / double
 * above), the ISA's matmul against the scalar one, and both over sub-ranges
 * of rows into a Y with a gap between tokens (ldy > rows) that must stay
 * untouched, as must GUARD floats after the last token. */
static void matmul_case(tctx *t, ml_type type, int rows, int K, int n_tok, int mode, matmul_fn isa,
                        matmul_fn sc, matvec_fn mv_sc, const char *name) {
    const int nb = K / ML_QK, ldy = rows + 3;
    const size_t ny = (size_t)n_tok * (size_t)ldy;
    ml_qtensor W = ref_qtensor(type, rows, K);
    ml_qact x0 = ref_qact(K);
    ml_qbatch X = {(int8_t *)ref_alloc((size_t)n_tok * (size_t)K), ref_floats((size_t)n_tok * (size_t)nb), K, n_tok};
    /* fill_matvec fills W and one token; every token gets its own draw */
    for (int tk = 0; tk < n_tok; tk++) {
        fill_matvec(t, &W, &x0, mode);
        memcpy(X.q + (size_t)tk * (size_t)K, x0.q, (size_t)K);
        memcpy(X.d + (size_t)tk * (size_t)nb, x0.d, (size_t)nb * sizeof(float));
    }
    float *yi = ref_floats(ny + GUARD), *ys = ref_floats(ny + GUARD), *yv = ref_floats((size_t)rows);

    int r0s[4] = {0, 1, rows / 2, ref_int(&t->rng, 0, rows - 1)};
    int r1s[4] = {rows, rows - 1, rows / 2 + 1, rows};
    for (int c = 0; c < 4; c++) {
        const int r0 = r0s[c], r1 = r1s[c];
        if (r0 > r1) continue;
        reset_y(yi, (int)ny);
        reset_y(ys, (int)ny);
        isa(yi, ldy, &W, &X, r0, r1);
        sc(ys, ldy, &W, &X, r0, r1);
        int bad_v = 0, bad_i = 0, outside = 0;
        for (int tk = 0; tk < n_tok; tk++) {
            const ml_qact xt = ml_qbatch_token(&X, tk);
            mv_sc(yv, &W, &xt, 0, rows);
            for (int e = 0; e < ldy; e++) {
                const size_t i = (size_t)tk * (size_t)ldy + (size_t)e;
                if (e < r0 || e >= r1) {
                    outside |= !ref_same_bits(yi[i], SENTINEL) || !ref_same_bits(ys[i], SENTINEL);
                    continue;
                }
                bad_v |= !ref_same_bits(ys[i], yv[e]);
                bad_i |= !ref_same_bits(yi[i], ys[i]);
            }
        }
        outside |= !guard_ok(yi, (int)ny) || !guard_ok(ys, (int)ny);
        CHECK(!bad_v, "%s scalar vs matvec token by token: rows=%d K=%d n_tok=%d mode=%d [%d,%d)", name, rows, K,
              n_tok, mode, r0, r1);
        CHECK(!bad_i, "%s bit-exact vs scalar: rows=%d K=%d n_tok=%d mode=%d [%d,%d)", name, rows, K, n_tok, mode,
              r0, r1);
        CHECK(!outside, "%s rows=%d K=%d n_tok=%d [%d,%d): wrote outside its rows", name, rows, K, n_tok, r0, r1);
    }
    ref_free(yi);
    ref_free(ys);
    ref_free(yv);
    ref_free(X.q);
    ref_free(X.d);
    ref_qact_free(&x0);
    ref_qtensor_free(&W);
}

static void test_matmul(tctx *t, ml_type type, matmul_fn isa, matmul_fn sc, matvec_fn mv_sc, const char *name) {
    int before = tl_failed;
    const int ks[] = {32, 64, 96, 288, 768};
    /* around the row tiles and groups (4, 16, 64 rows), the token tiles
     * a kernel may use (1 to 8 tokens at a time, and what is left of a
     * batch after them: 10, 11, 14 and 15 are 4-token tiles and 2 or 3
     * tokens), the batch sizes where a kernel changes body (8, 12, 16)
     * and the steps of 4 blocks (K of 1, 2 and 3 blocks: a short step alone) */
    const int rows_list[] = {1, 3, 4, 5, 16, 17, 33, 64, 71};
    const int toks[] = {1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 14, 15, 17};
    for (int ki = 0; ki < (int)(sizeof ks / sizeof ks[0]); ki++)
        for (int ri = 0; ri < (int)(sizeof rows_list / sizeof rows_list[0]); ri++)
            for (int ti = 0; ti < (int)(sizeof toks / sizeof toks[0]); ti++) {
                const int K = ks[ki], rows = rows_list[ri], n_tok = toks[ti];
                if (K >= 768 && (rows > 17 || (t->quick && n_tok > 5))) continue;
                matmul_case(t, type, rows, K, n_tok, MV_SCALED, isa, sc, mv_sc, name);
                if (ti % 3 == 0 && K <= 288) {
                    matmul_case(t, type, rows, K, n_tok, MV_EXTREME, isa, sc, mv_sc, name);
                    matmul_case(t, type, rows, K, n_tok, MV_TINY, isa, sc, mv_sc, name);
                }
            }
    /* past a chunk of 32 blocks and an activation tile of 64 tokens (the
     * avx2 and avxvnni 8-row matmul: the running sums wait in Y) */
    matmul_case(t, type, 17, 33 * ML_QK, 9, MV_SCALED, isa, sc, mv_sc, name);
    matmul_case(t, type, 17, 33 * ML_QK, 9, MV_EXTREME, isa, sc, mv_sc, name);
    matmul_case(t, type, 9, 33 * ML_QK, 67, MV_SCALED, isa, sc, mv_sc, name);
    /* two row tiles of 8-row groups (the 128-bit and avx2 pair matmul: 64
     * rows a tile) and a group after them */
    matmul_case(t, type, 136, 5 * ML_QK, 15, MV_SCALED, isa, sc, mv_sc, name);
    /* three groups in one row tile (the avx2 pair matmul takes two groups a
     * tile: a pair, then the last group alone) */
    matmul_case(t, type, 24, 5 * ML_QK, 15, MV_SCALED, isa, sc, mv_sc, name);
    /* random shapes (this run's seed): row counts across several row tiles,
     * odd group counts and tails, chunks of blocks, token counts around the
     * body switch and the token tiles; matmul_case adds random row ranges */
    for (int i = 0; i < (t->quick ? 4 : 12); i++) {
        static const int tok_edges[] = {11, 12, 13, 15, 16, 17, 19, 63, 64, 65};
        const int rows = ref_int(&t->rng, 1, 160), K = ML_QK * ref_int(&t->rng, 1, 12);
        const int n_tok = i % 2 ? tok_edges[ref_int(&t->rng, 0, (int)(sizeof tok_edges / sizeof *tok_edges) - 1)]
                                : ref_int(&t->rng, 1, 70);
        matmul_case(t, type, rows, K, n_tok, i % 4 == 3 ? MV_EXTREME : MV_SCALED, isa, sc, mv_sc, name);
    }
    char what[160];
    snprintf(what, sizeof what, "%s: batch = its tokens one by one, bit-exact vs scalar, row ranges, ldy gap", name);
    GROUP_DONE(what, before);
}

static int float_sizes(tctx *t, int *n) {
    const int fixed[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 288, 1000};
    int c = 0;
    for (int i = 0; i < (int)(sizeof fixed / sizeof fixed[0]); i++) n[c++] = fixed[i];
    for (int i = 0; i < (t->quick ? 1 : 4); i++) n[c++] = ref_int(&t->rng, 1, 2000);
    return c;
}

static void test_rmsnorm(tctx *t) {
    int before = tl_failed, ns[32], nn = float_sizes(t, ns);
    const float scales[] = {1e-3f, 1.0f, 300.0f};
    for (int ni = 0; ni < nn; ni++)
        for (int si = 0; si < 3; si++)
            for (int mis = 0; mis < 2; mis++) {
                int n = ns[ni];
                float *bx, *bw, *bo, *bs, *ba;
                float *x = guarded(&bx, n, mis), *w = guarded(&bw, n, mis), *o = guarded(&bo, n, mis);
                float *os = guarded(&bs, n, 0), *al = guarded(&ba, n, mis);
                double *ref = malloc((size_t)n * sizeof(double));
                for (int i = 0; i < n; i++) {
                    x[i] = si == 0 && i % 5 == 0 ? 0.0f : ref_gauss(&t->rng) * scales[si];
                    w[i] = 1.0f + 0.2f * ref_gauss(&t->rng);
                    al[i] = x[i];
                }
                const float eps = 1e-5f;
                ml_k_rmsnorm(o, x, w, n, eps);
                ml_k_rmsnorm_scalar(os, x, w, n, eps);
                ml_k_rmsnorm(al, al, w, n, eps); /* o aliases x */
                ref_rmsnorm(ref, x, w, n, eps);
                int bs_ = -1, bi = -1, ba_ = -1;
                for (int i = 0; i < n; i++) {
                    if (bs_ < 0 && !ref_close(os[i], ref[i], 1e-30)) bs_ = i;
                    if (bi < 0 && !ref_same_bits(o[i], os[i])) bi = i;
                    if (ba_ < 0 && !ref_same_bits(al[i], o[i])) ba_ = i;
                }
                CHECK(bs_ < 0, "rmsnorm scalar vs double n=%d scale=%g: element %d", n, (double)scales[si], bs_);
                CHECK(bi < 0, "rmsnorm vs scalar n=%d scale=%g misalign=%d: element %d: %.9g vs %.9g", n,
                      (double)scales[si], mis, bi, bi < 0 ? 0.0 : (double)o[bi], bi < 0 ? 0.0 : (double)os[bi]);
                CHECK(ba_ < 0, "rmsnorm in place (o == x) n=%d differs from out of place at %d", n, ba_);
                CHECK(guard_ok(o, n) && guard_ok(os, n) && guard_ok(al, n), "rmsnorm n=%d wrote past n", n);
                ref_free(bx), ref_free(bw), ref_free(bo), ref_free(bs), ref_free(ba), free(ref);
            }
    GROUP_DONE("rmsnorm: vs double and scalar, in place, odd n, misaligned", before);
}

/* Softmax inputs: ordinary, large positive, large negative, all equal, one
 * dominant value (others underflow), a span wider than expf's range, terms
 * on both sides of canon.h rule 3's cut (x - max = -64), terms spread
 * evenly over (e^-70, 1] (sums from 1 to about n); then the kinds
 * without a finite double reference, checked bit for bit against the scalar
 * twin and by what they must give: NaN first (the max is NaN: every output
 * NaN), NaN later (skipped by the max, its term 0), one +inf (every term
 * 0 or NaN: every output NaN). */
enum { SM_GAUSS, SM_LARGE, SM_NEG, SM_EQUAL, SM_DOMINANT, SM_WIDE, SM_CUT, SM_SPREAD,
       SM_NAN_FIRST, SM_NAN_LATER, SM_INF, SM_KINDS };

/* SM_CUT's x - max values, in turn (x[0] = 0 is the max): the cut itself and
 * the floats beside it, the denormal range of exp and of p = e / sum, -inf. */
static float sm_cut_value(int i) {
    static const float d[] = {-64.0f, -63.999996f, -64.00001f, -1.0f, -70.0f, -86.0f, -95.0f, -103.0f, -200.0f,
                              -INFINITY, -30.0f, -0.5f};
    return i == 0 ? 0.0f : d[i % (int)(sizeof d / sizeof d[0])];
}

/* Rule 3's cut, by itself: the scalar softmax keeps a term at the cut and
 * makes the next float below it exactly 0; the vector kernel agrees, in its
 * main loop (elements 1, 2) and its tail (17, 18). */
static void test_softmax_cut(void) {
    int before = tl_failed;
    enum { N = 19 };
    const float at = -ML_SOFTMAX_CUT, below = nextafterf(-ML_SOFTMAX_CUT, -INFINITY);
    float x[N] = {0.0f, at, below}, y[N];
    for (int i = 3; i < N; i++) x[i] = i == 17 ? at : i == 18 ? below : -100.0f - (float)i;
    memcpy(y, x, sizeof x);
    ml_k_softmax_scalar(x, N);
    ml_k_softmax(y, N);
    CHECK(x[1] > 0.0f && x[1] < 1e-27f, "softmax: the term at the cut: %g, expected e^-64 = 1.6e-28", (double)x[1]);
    CHECK(x[2] == 0.0f && !signbit(x[2]), "softmax: the term below the cut: %g, expected +0", (double)x[2]);
    CHECK(x[0] == 1.0f, "softmax: the max's term with the others under 1e-27: %.9g, expected 1", (double)x[0]);
    CHECK(memcmp(x, y, sizeof x) == 0, "softmax at the cut: the vector kernel differs from the scalar twin");
    GROUP_DONE("softmax: rule 3's cut (kept at x - max = -64, 0 below)", before);
}

static void test_softmax(tctx *t) {
    test_softmax_cut();
    int before = tl_failed, ns[32], nn = float_sizes(t, ns);
    for (int ni = 0; ni < nn; ni++)
        for (int kind = 0; kind < SM_KINDS; kind++)
            for (int mis = 0; mis < 2; mis++) {
                int n = ns[ni];
                float *bx, *bs;
                float *x = guarded(&bx, n, mis), *s = guarded(&bs, n, mis);
                double *ref = malloc((size_t)n * sizeof(double));
                for (int i = 0; i < n; i++) {
                    float g = ref_gauss(&t->rng);
                    x[i] = kind == SM_GAUSS      ? 3.0f * g
                           : kind == SM_LARGE    ? 1e4f + 10.0f * g
                           : kind == SM_NEG      ? -8e4f + 10.0f * g
                           : kind == SM_EQUAL    ? 42.5f
                           : kind == SM_DOMINANT ? (i == n / 2 ? 100.0f : 0.0f)
                           : kind == SM_CUT      ? sm_cut_value(i)
                           : kind == SM_WIDE     ? ref_uniform(&t->rng, -150.0f, 150.0f)
                           : kind == SM_SPREAD   ? (i == 0 ? 0.0f : ref_uniform(&t->rng, -70.0f, 0.0f))
                           : kind == SM_NAN_FIRST ? (i == 0 ? NAN : 3.0f * g)
                           : kind == SM_NAN_LATER ? (i % 7 == 3 ? NAN : 3.0f * g)
                                                  : (i == n / 2 ? INFINITY : 3.0f * g);
                    s[i] = x[i];
                }
                const int finite = kind < SM_NAN_FIRST;
                if (finite) ref_softmax(ref, x, n);
                ml_k_softmax(x, n);
                ml_k_softmax_scalar(s, n);
                int bs_ = -1, bi = -1;
                for (int i = 0; i < n; i++) {
                    /* the non-finite kinds: NaN everywhere, or 0 at a skipped NaN */
                    const int want = kind == SM_NAN_LATER ? i % 7 != 3 || s[i] == 0.0f : isnan(s[i]);
                    if (bs_ < 0 && (finite ? !ref_close(s[i], ref[i], 1e-20) : !want)) bs_ = i;
                    if (bi < 0 && !ref_same_bits(x[i], s[i])) bi = i;
                }
                CHECK(bs_ < 0, "softmax scalar vs double (or its NaN rule) n=%d kind=%d: element %d: %.9g vs %.9g", n,
                      kind, bs_, bs_ < 0 ? 0.0 : (double)s[bs_], bs_ < 0 || !finite ? 0.0 : ref[bs_]);
                CHECK(bi < 0, "softmax vs scalar n=%d kind=%d misalign=%d: element %d: %.9g vs %.9g", n, kind, mis,
                      bi, bi < 0 ? 0.0 : (double)x[bi], bi < 0 ? 0.0 : (double)s[bi]);
                CHECK(guard_ok(x, n) && guard_ok(s, n), "softmax n=%d wrote past n", n);
                ref_free(bx), ref_free(bs), free(ref);
            }
    GROUP_DONE("softmax: vs double and scalar, large/negative/equal/dominant/wide/cut/spread/NaN/inf inputs, "
               "odd n", before);
}

static void test_silu_mul(tctx *t) {
    int before = tl_failed, ns[32], nn = float_sizes(t, ns);
    /* past the SIMD exp's [-88, 88] and where expf overflows or underflows */
    const float edge[] = {-1000.0f, -200.0f, -104.0f, -100.0f, -89.0f, -88.5f, -88.0f, -87.5f, -20.0f, -1e-30f,
                          -0.0f,    0.0f,    1e-30f,  20.0f,   87.5f,  88.0f,  88.5f,  89.0f,   100.0f, 1000.0f};
    const int ne = (int)(sizeof edge / sizeof edge[0]);
    for (int ni = 0; ni < nn; ni++)
        for (int mis = 0; mis < 2; mis++) {
            int n = ns[ni];
            float *bg, *bu, *bs;
            float *g = guarded(&bg, n, mis), *u = guarded(&bu, n, mis), *s = guarded(&bs, n, mis);
            double *ref = malloc((size_t)n * sizeof(double));
            for (int i = 0; i < n; i++) {
                g[i] = ni % 2 && i < ne ? edge[(i + ni) % ne] : ref_uniform(&t->rng, -92.0f, 92.0f);
                u[i] = ref_gauss(&t->rng);
                s[i] = g[i];
                ref[i] = ref_silu_mul(g[i], u[i]);
            }
            ml_k_silu_mul(g, u, n);
            ml_k_silu_mul_scalar(s, u, n);
            int bs_ = -1, bi = -1;
            for (int i = 0; i < n; i++) {
                double floor = 1e-6 * fabs((double)u[i]);
                if (bs_ < 0 && !ref_close(s[i], ref[i], floor)) bs_ = i;
                if (bi < 0 && !ref_same_bits(g[i], s[i])) bi = i;
            }
            CHECK(bs_ < 0, "silu_mul scalar vs double n=%d: element %d: %.9g vs %.9g", n, bs_,
                  bs_ < 0 ? 0.0 : (double)s[bs_], bs_ < 0 ? 0.0 : ref[bs_]);
            CHECK(bi < 0, "silu_mul vs scalar n=%d misalign=%d: element %d: %.9g vs %.9g", n, mis, bi,
                  bi < 0 ? 0.0 : (double)g[bi], bi < 0 ? 0.0 : (double)s[bi]);
            CHECK(guard_ok(g, n) && guard_ok(s, n), "silu_mul n=%d wrote past n", n);
            ref_free(bg), ref_free(bu), ref_free(bs), free(ref);
        }
    GROUP_DONE("silu_mul: vs double and scalar over [-92, 92] and +-1000, odd n", before);
}

static void test_rope(tctx *t) {
    int before = tl_failed;
    const int dims[] = {2, 4, 6, 8, 10, 16, 32, 48, 64, 128};
    const int heads[][2] = {{1, 1}, {3, 3}, {4, 2}, {6, 1}, {8, 4}, {12, 12}};
    const int pos[] = {0, 1, 7, 300, 4095, 100000};
    for (int di = 0; di < (int)(sizeof dims / sizeof dims[0]); di++)
        for (int hi = 0; hi < (int)(sizeof heads / sizeof heads[0]); hi++)
            for (int pi = 0; pi < (int)(sizeof pos / sizeof pos[0]); pi++) {
                if (t->quick && pi % 2) continue;
                int hd = dims[di], nh = heads[hi][0], nkv = heads[hi][1], half = hd / 2;
                int nq = nh * hd, nk = nkv * hd, mis = (di + hi + pi) % 2, with_k = (pi + hi) % 3 != 0;
                float *bq, *bk, *bqs, *bks, *bc, *bsn;
                float *q = guarded(&bq, nq, mis), *k = guarded(&bk, nk, mis);
                float *qs = guarded(&bqs, nq, mis), *ks = guarded(&bks, nk, mis);
                float *c = guarded(&bc, half, mis), *sn = guarded(&bsn, half, mis);
                float *q0 = ref_floats((size_t)nq), *k0 = ref_floats((size_t)nk);
                /* the table row the loader precomputes: freq_i = 10000^(-2i/hd) */
                for (int i = 0; i < half; i++) {
                    double ang = pos[pi] * pow(10000.0, -2.0 * i / hd);
                    c[i] = (float)cos(ang);
                    sn[i] = (float)sin(ang);
                }
                for (int i = 0; i < nq; i++) q[i] = qs[i] = q0[i] = ref_gauss(&t->rng);
                for (int i = 0; i < nk; i++) k[i] = ks[i] = k0[i] = ref_gauss(&t->rng);
                ml_k_rope(q, with_k ? k : NULL, c, sn, hd, nh, nkv);
                ml_k_rope_scalar(qs, with_k ? ks : NULL, c, sn, hd, nh, nkv);
                int bad_s = 0, bad_i = 0, ident = 0;
                for (int pass = 0; pass < 2; pass++) {
                    const float *v0 = pass ? k0 : q0, *got = pass ? k : q, *sc = pass ? ks : qs;
                    int n = pass ? nk : nq;
                    if (pass && !with_k) {
                        /* k == NULL: k must be untouched */
                        for (int i = 0; i < n; i++) bad_i |= !ref_same_bits(got[i], v0[i]);
                        continue;
                    }
                    for (int i = 0; i < n; i += 2) {
                        double r0, r1, mag;
                        int p = (i % hd) / 2;
                        ref_rope_pair(&r0, &r1, &mag, v0[i], v0[i + 1], c[p], sn[p]);
                        bad_s |= !ref_close(sc[i], r0, FLOOR_SUM * mag) || !ref_close(sc[i + 1], r1, FLOOR_SUM * mag);
                        bad_i |= !ref_same_bits(got[i], sc[i]) || !ref_same_bits(got[i + 1], sc[i + 1]);
                        /* position 0 rotates by 0: the identity, exactly */
                        if (pos[pi] == 0) ident |= got[i] != v0[i] || got[i + 1] != v0[i + 1];
                    }
                }
                CHECK(!bad_s, "rope scalar vs double hd=%d heads=%d/%d pos=%d", hd, nh, nkv, pos[pi]);
                CHECK(!bad_i, "rope vs scalar hd=%d heads=%d/%d pos=%d k=%s misalign=%d", hd, nh, nkv, pos[pi],
                      with_k ? "yes" : "NULL", mis);
                CHECK(!ident, "rope at position 0 is not the identity (hd=%d)", hd);
                CHECK(guard_ok(q, nq) && guard_ok(k, nk) && guard_ok(qs, nq) && guard_ok(ks, nk),
                      "rope hd=%d heads=%d/%d wrote past the last head", hd, nh, nkv);
                ref_free(bq), ref_free(bk), ref_free(bqs), ref_free(bks), ref_free(bc), ref_free(bsn), ref_free(q0), ref_free(k0);
            }
    GROUP_DONE("rope: vs double and scalar, positions 0 to 100000, GQA head counts, k NULL", before);
}

static void test_vec(tctx *t) {
    int before = tl_failed, ns[32], nn = float_sizes(t, ns);
    for (int ni = 0; ni < nn; ni++)
        for (int mis = 0; mis < 2; mis++) {
            int n = ns[ni];
            float *ba, *bb, *by, *bys;
            float *a = guarded(&ba, n, mis), *b = guarded(&bb, n, mis);
            float *y = guarded(&by, n, mis), *ys = guarded(&bys, n, mis);
            for (int i = 0; i < n; i++) {
                a[i] = ref_gauss(&t->rng) * (i % 7 == 0 ? 100.0f : 1.0f);
                b[i] = ref_gauss(&t->rng);
                y[i] = ys[i] = ref_gauss(&t->rng);
            }

            /* add: one rounding per element, so bit-identical to the
             * correctly rounded sum (exact in double for these operands) */
            double *yref = malloc((size_t)n * sizeof(double));
            for (int i = 0; i < n; i++) yref[i] = (double)y[i] + (double)a[i];
            ml_k_add(y, a, n);
            ml_k_add_scalar(ys, a, n);
            int bad_s = 0, bad_i = 0;
            for (int i = 0; i < n; i++) {
                bad_s |= ys[i] != (float)yref[i];
                bad_i |= !ref_same_bits(y[i], ys[i]);
            }
            CHECK(!bad_s, "add scalar n=%d: not the correctly rounded sum", n);
            CHECK(!bad_i, "add n=%d misalign=%d: not bit-identical to scalar", n, mis);
            CHECK(guard_ok(y, n) && guard_ok(ys, n), "add n=%d wrote past n", n);

            /* dot_f32 */
            double mag, ref = ref_dot(a, b, n, &mag);
            float di = ml_k_dot_f32(a, b, n), ds = ml_k_dot_f32_scalar(a, b, n);
            CHECK(ref_close(ds, ref, FLOOR_SUM * mag), "dot_f32 scalar vs double n=%d: %.9g vs %.9g", n, (double)ds, ref);
            CHECK(ref_same_bits(di, ds), "dot_f32 vs scalar n=%d misalign=%d: %.9g vs %.9g", n, mis,
                  (double)di, (double)ds);

            /* axpy_f32, with a = 0 once (y must come back unchanged) */
            float alpha = ni % 5 == 0 ? 0.0f : ref_gauss(&t->rng);
            for (int i = 0; i < n; i++) {
                y[i] = ys[i];
                yref[i] = (double)ys[i] + (double)alpha * a[i];
            }
            ml_k_axpy_f32(y, alpha, a, n);
            ml_k_axpy_f32_scalar(ys, alpha, a, n);
            bad_s = bad_i = 0;
            for (int i = 0; i < n; i++) {
                double m = fabs(yref[i] - (double)alpha * a[i]) + fabs((double)alpha * a[i]);
                bad_s |= !ref_close(ys[i], yref[i], FLOOR_SUM * m);
                bad_i |= !ref_same_bits(y[i], ys[i]);
            }
            CHECK(!bad_s, "axpy_f32 scalar vs double n=%d", n);
            CHECK(!bad_i, "axpy_f32 vs scalar n=%d a=%g misalign=%d", n, (double)alpha, mis);
            CHECK(guard_ok(y, n) && guard_ok(ys, n), "axpy_f32 n=%d wrote past n", n);
            ref_free(ba), ref_free(bb), ref_free(by), ref_free(bys), free(yref);
        }
    GROUP_DONE("add (bit-exact), dot_f32, axpy_f32: vs double and scalar, odd n, misaligned", before);
}

/* ---- attention: scores and value sums of a query group over a key block --- */

/* kernels/canon.h rule 6 in plain float math: the score is the rule-2 dot
 * (the scalar dot_f32, itself checked against double above) divided by the
 * scale; an output element adds p_t * v_t key by key. */
static float plain_score(const float *q, const float *k, int hd, float scale) {
    float lane[8] = {0};
    int h8 = hd & ~7;
    for (int i = 0; i < h8; i++) lane[i % 8] += q[i] * k[i];
    float d = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    for (int i = h8; i < hd; i++) d += q[i] * k[i];
    return d / scale;
}

/* Head sizes of real models (8 .. 128) and one with a tail, group sizes 1, 4
 * and 8 (stories15M, a 4:1 and TinyLlama's 8:1 GQA), 1 to 300 keys; keys and
 * values are rows of a wider cache (ldk > hd, as kv_dim), scores rows of a
 * wider scratch (lds > n), outputs rows of a token (ldo = hd). The scalar
 * twin against plain float math bit for bit and against double within the
 * dot rule, the bound kernels against the scalar twins bit for bit; guards
 * after every score row and after the outputs. */
static void test_attn(tctx *t) {
    /* head sizes: every chunk of 1-4 vectors on 4, 8 and 16 lanes, and
     * tails; query sets: each power-of-two group the values take at once */
    static const int hds[] = {8, 12, 20, 48, 56, 80, 96, 128}, gs[] = {1, 3, 7, 8, 13};
    static const int ns[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 255, 300};
    int before = tl_failed;
    for (size_t hi = 0; hi < sizeof hds / sizeof *hds; hi++)
        for (size_t gi = 0; gi < sizeof gs / sizeof *gs; gi++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                if (t->quick && ni % 3 && ns[ni] != 300) continue;
                int hd = hds[hi], G = gs[gi], n = ns[ni], mis = (int)(hi + ni) % 2;
                int ldk = hd * 3 + mis, lds = n + 5, ldp = lds;
                float scale = sqrtf((float)hd);
                float *bq, *bk, *bv, *bsi, *bss, *boi, *bos, *bp;
                float *q = guarded(&bq, G * hd, mis), *k = guarded(&bk, n * ldk, mis), *v = guarded(&bv, n * ldk, mis);
                float *si = guarded(&bsi, G * lds, mis), *ss = guarded(&bss, G * lds, mis);
                float *oi = guarded(&boi, G * hd, mis), *os = guarded(&bos, G * hd, mis);
                float *p = guarded(&bp, G * ldp, mis), *plain = malloc((size_t)G * (size_t)hd * sizeof *plain);
                for (int i = 0; i < G * hd; i++) q[i] = ref_gauss(&t->rng) * (i % 5 == 0 ? 30.0f : 1.0f);
                for (int i = 0; i < n * ldk; i++) k[i] = ref_gauss(&t->rng), v[i] = ref_gauss(&t->rng);
                for (int i = 0; i < G * lds; i++) si[i] = ss[i] = SENTINEL, p[i] = ref_gauss(&t->rng);
                for (int i = 0; i < G * hd; i++) oi[i] = os[i] = plain[i] = ni % 4 ? 0.0f : ref_gauss(&t->rng);

                ml_k_attn_scores(si, lds, q, hd, G, k, ldk, n, hd, scale);
                ml_k_attn_scores_scalar(ss, lds, q, hd, G, k, ldk, n, hd, scale);
                int bad_p = -1, bad_d = -1, bad_i = -1, bad_g = 0;
                for (int g = 0; g < G; g++) {
                    for (int j = 0; j < n; j++) {
                        const float *qg = q + g * hd, *kj = k + (size_t)j * ldk;
                        float got = ss[g * lds + j];
                        double mag, ref = ref_dot(qg, kj, hd, &mag) / scale;
                        if (bad_p < 0 && !ref_same_bits(got, plain_score(qg, kj, hd, scale))) bad_p = j;
                        if (bad_d < 0 && !ref_close(got, ref, FLOOR_SUM * mag / scale)) bad_d = j;
                        if (bad_i < 0 && !ref_same_bits(si[g * lds + j], got)) bad_i = j;
                    }
                    for (int j = n; j < lds; j++) /* the scratch row past n untouched */
                        bad_g |= !ref_same_bits(si[g * lds + j], SENTINEL) || !ref_same_bits(ss[g * lds + j], SENTINEL);
                }
                CHECK(bad_p < 0, "attn_scores scalar hd=%d G=%d n=%d: key %d not the plain float dot", hd, G, n, bad_p);
                CHECK(bad_d < 0, "attn_scores scalar vs double hd=%d G=%d n=%d: key %d", hd, G, n, bad_d);
                CHECK(bad_i < 0, "attn_scores vs scalar hd=%d G=%d n=%d misalign=%d: key %d", hd, G, n, mis, bad_i);
                CHECK(!bad_g && guard_ok(si, G * lds) && guard_ok(ss, G * lds),
                      "attn_scores hd=%d G=%d n=%d wrote past a row", hd, G, n);

                ml_k_attn_values(oi, hd, p, ldp, G, v, ldk, n, hd);
                ml_k_attn_values_scalar(os, hd, p, ldp, G, v, ldk, n, hd);
                bad_p = bad_d = bad_i = -1;
                for (int g = 0; g < G; g++)
                    for (int i = 0; i < hd; i++) {
                        double ref = plain[g * hd + i], mag = fabs(ref);
                        for (int j = 0; j < n; j++) {
                            float a = p[g * ldp + j], x = v[(size_t)j * ldk + i];
                            plain[g * hd + i] += a * x;
                            ref += (double)a * x, mag += fabs((double)a * x);
                        }
                        float got = os[g * hd + i];
                        if (bad_p < 0 && !ref_same_bits(got, plain[g * hd + i])) bad_p = g * hd + i;
                        if (bad_d < 0 && !ref_close(got, ref, FLOOR_SUM * mag)) bad_d = g * hd + i;
                        if (bad_i < 0 && !ref_same_bits(oi[g * hd + i], got)) bad_i = g * hd + i;
                    }
                CHECK(bad_p < 0, "attn_values scalar hd=%d G=%d n=%d: element %d not the plain float sum", hd, G, n, bad_p);
                CHECK(bad_d < 0, "attn_values scalar vs double hd=%d G=%d n=%d: element %d", hd, G, n, bad_d);
                CHECK(bad_i < 0, "attn_values vs scalar hd=%d G=%d n=%d misalign=%d: element %d", hd, G, n, mis, bad_i);
                CHECK(guard_ok(oi, G * hd) && guard_ok(os, G * hd), "attn_values hd=%d G=%d n=%d wrote past", hd, G, n);
                ref_free(bq), ref_free(bk), ref_free(bv), ref_free(bsi), ref_free(bss), ref_free(boi), ref_free(bos);
                ref_free(bp), free(plain);
            }
    GROUP_DONE("attn_scores, attn_values: vs plain float, double and scalar, head sizes 8-128, sets of 1-13 queries, 1-300 keys",
               before);
}

/* ---- dequant_row --------------------------------------------------------- */

typedef void (*dequant_fn)(float *, const ml_qtensor *, int);

/* Every row of small matrices (odd block counts, real, extreme and tiny
 * scales): the scalar twin against plain float math, d * value with the
 * value read by kernel_ref.h's own unpack (one IEEE multiply, so equal bits),
 * and the bound kernel against the scalar twin, bit for bit. */
static void test_dequant(tctx *t, ml_type type, dequant_fn isa, dequant_fn sc, const char *name) {
    static const int Ks[] = {32, 96, 160};
    static const int modes[] = {MV_SCALED, MV_EXTREME, MV_TINY};
    int before = tl_failed, rows = 5;
    for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
        for (size_t mi = 0; mi < sizeof modes / sizeof *modes; mi++) {
            int K = Ks[ki], mis = (int)(ki + mi) % 2;
            ml_qtensor W = ref_qtensor(type, rows, K);
            ml_qact x = ref_qact(K);
            fill_matvec(t, &W, &x, modes[mi]);
            float *bi, *bs, *oi = guarded(&bi, K, mis), *os = guarded(&bs, K, mis);
            for (int r = 0; r < rows; r++) {
                isa(oi, &W, r);
                sc(os, &W, r);
                int bad_s = 0, bad_i = 0;
                for (int e = 0; e < K; e++) {
                    bad_s += !ref_same_bits(os[e], ref_wd(&W, r, e / ML_QK) * (float)ref_wq(&W, r, e));
                    bad_i += !ref_same_bits(oi[e], os[e]);
                }
                CHECK(!bad_s, "%s scalar K=%d row %d mode %d: %d elements differ from d * value", name, K, r,
                      modes[mi], bad_s);
                CHECK(!bad_i, "%s vs scalar K=%d row %d mode %d: %d elements differ", name, K, r, modes[mi], bad_i);
                CHECK(guard_ok(oi, K) && guard_ok(os, K), "%s K=%d row %d wrote past the row", name, K, r);
            }
            ref_qtensor_free(&W), ref_qact_free(&x), ref_free(bi), ref_free(bs);
        }
    char what[128];
    snprintf(what, sizeof what, "%s: every row vs plain float math and scalar, odd block counts, tiny scales", name);
    GROUP_DONE(what, before);
}

/* ---- the kernel list decides what is tested ------------------------------ */

/* Each kernel of config/ml_kernels.h names its test group here, so a new
 * kernel does not compile until it has one; a group that covers several
 * kernels (test_vec: add, dot_f32, axpy_f32) runs once. */
typedef void (*test_group)(tctx *t);
static void test_matvec_q8(tctx *t) { test_matvec(t, ML_TYPE_Q8_0, ml_k_matvec_q8, ml_k_matvec_q8_scalar, "matvec_q8"); }
static void test_matvec_q4(tctx *t) { test_matvec(t, ML_TYPE_Q4_0, ml_k_matvec_q4, ml_k_matvec_q4_scalar, "matvec_q4"); }
static void test_matmul_q8(tctx *t) {
    test_matmul(t, ML_TYPE_Q8_0, ml_k_matmul_q8, ml_k_matmul_q8_scalar, ml_k_matvec_q8_scalar, "matmul_q8");
}
static void test_matmul_q4(tctx *t) {
    test_matmul(t, ML_TYPE_Q4_0, ml_k_matmul_q4, ml_k_matmul_q4_scalar, ml_k_matvec_q4_scalar, "matmul_q4");
}
static void test_dequant_row_q8(tctx *t) {
    test_dequant(t, ML_TYPE_Q8_0, ml_k_dequant_row_q8, ml_k_dequant_row_q8_scalar, "dequant_row_q8");
}
static void test_dequant_row_q4(tctx *t) {
    test_dequant(t, ML_TYPE_Q4_0, ml_k_dequant_row_q4, ml_k_dequant_row_q4_scalar, "dequant_row_q4");
}

/* ---- fp16 scales ----------------------------------------------------------- */

/* The conversions of core/quant.h against their definitions: every half
 * -> float by plain float math (sign * m * 2^(e-25)) and back unchanged;
 * float -> half the nearest half, ties to the even one, at every midpoint
 * between two halves and at random floats. */
static void test_f16_convert(tctx *t) {
    int before = tl_failed, bad_up = 0, bad_rt = 0, bad_mid = 0, bad_rnd = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        const int e = (int)((h >> 10) & 0x1F), m = (int)(h & 0x3FF);
        const float f = ml_f16_to_f32((uint16_t)h);
        if (e == 0x1F) {
            bad_up += m ? !isnan(f) : !isinf(f) || (signbit(f) != 0) != (h >> 15 != 0);
            continue;
        }
        double v = e ? ldexp(1024.0 + m, e - 25) : ldexp((double)m, -24);
        if (h >> 15) v = -v;
        bad_up += !ref_same_bits(f, (float)v) || (signbit(f) != 0) != (h >> 15 != 0);
        bad_rt += ml_f32_to_f16(f) != h;
        /* the midpoint to the next half up in magnitude: a tie, to the even one */
        if ((h & 0x7FFF) < 0x7BFF) {
            const float up = ml_f16_to_f32((uint16_t)(h + 1));
            const float mid = (float)(((double)f + (double)up) / 2);
            bad_mid += ml_f32_to_f16(mid) != ((h & 1) ? h + 1 : h);
        }
    }
    for (int i = 0; i < 200000; i++) { /* random floats of the half range: the nearest half */
        const float f = ref_uniform(&t->rng, -1.0f, 1.0f) * ldexpf(1.0f, ref_int(&t->rng, -26, 15));
        const uint16_t h = ml_f32_to_f16(f);
        const double d = fabs((double)ml_f16_to_f32(h) - f);
        const uint16_t nb[2] = {(uint16_t)(h - 1), (uint16_t)(h + 1)};
        for (int k = 0; k < 2; k++) {
            if ((nb[k] & 0x7C00) == 0x7C00 || ((h & 0x7FFF) == 0 && k == 0)) continue;
            bad_rnd += fabs((double)ml_f16_to_f32(nb[k]) - f) < d;
        }
    }
    bad_rnd += ml_f32_to_f16(65519.0f) != 0x7BFF;
    bad_rnd += ml_f32_to_f16(65520.0f) != 0x7C00;
    bad_rnd += ml_f32_to_f16(-1e30f) != 0xFC00;
    bad_rnd += ml_f32_to_f16(ldexpf(1.0f, -25)) != 0;
    bad_rnd += ml_f32_to_f16(ldexpf(1.5f, -25)) != 1;
    CHECK(!bad_up, "ml_f16_to_f32: %d halves differ from sign * m * 2^e", bad_up);
    CHECK(!bad_rt, "ml_f32_to_f16(ml_f16_to_f32(h)) != h for %d halves", bad_rt);
    CHECK(!bad_mid, "ml_f32_to_f16: %d midpoints not rounded to the even half", bad_mid);
    CHECK(!bad_rnd, "ml_f32_to_f16: %d floats not rounded to the nearest half (or a limit wrong)", bad_rnd);
    GROUP_DONE("fp16 scales: every half -> float exact, float -> half nearest-even", before);
}

/* Every half that is not a NaN as the one scale of a one-block row whose
 * dot with the activations is 1 (dx = 1): y[r] = 1 * (dw * 1) = dw, so
 * the build's scale load must give ml_f16_to_f32's bits for each (F16C,
 * fcvtl and the integer conversion alike), subnormal halves, max-half and
 * infinities included. */
static void test_f16_every_half(ml_type type, matvec_fn mv, const char *name) {
    int before = tl_failed, rows = 0, bad = 0;
    ml_qtensor W = ref_qtensor(type, 0x10000, ML_QK);
    ml_qact x = ref_qact(ML_QK);
    W.stype = ML_TYPE_F16;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue; /* NaN */
        W.dh[rows] = (uint16_t)h;
        for (int j = 0; j < ML_QK; j++) {
            if (type == ML_TYPE_Q8_0) W.q[(size_t)rows * ML_QK + (size_t)j] = (int8_t)(j == 0);
            else if (j < ML_Q4_BLOCK_BYTES) W.q[(size_t)rows * ML_Q4_BLOCK_BYTES + (size_t)j] = (int8_t)(j == 0 ? 0x89 : 0x88);
        }
        rows++;
    }
    W.rows = rows;
    for (int j = 0; j < ML_QK; j++) x.q[j] = (int8_t)(j == 0);
    x.d[0] = 1.0f;
    float *y = ref_floats((size_t)rows);
    mv(y, &W, &x, 0, rows);
    for (int r = 0; r < rows; r++) bad += !ref_same_bits(y[r], 0.0f + ml_f16_to_f32(W.dh[r])); /* -0 sums to +0 */
    CHECK(!bad, "%s: %d of %d halves not converted exactly", name, bad, rows);
    ref_free(y), ref_qtensor_free(&W), ref_qact_free(&x);
    char what[128];
    snprintf(what, sizeof what, "%s: every half as a scale gives ml_f16_to_f32's bits", name);
    GROUP_DONE(what, before);
}

/* The fp16-scale kernels: the same sweeps as the fp32 ones (fill_matvec
 * rounds the scales to fp16 and mixes in edge halves). */
static void test_matvec_q8_f16(tctx *t) {
    test_f16_convert(t);
    test_f16_every_half(ML_TYPE_Q8_0, ml_k_matvec_q8_f16, "matvec_q8_f16");
    t->stype = ML_TYPE_F16;
    test_matvec(t, ML_TYPE_Q8_0, ml_k_matvec_q8_f16, ml_k_matvec_q8_f16_scalar, "matvec_q8_f16");
    t->stype = ML_TYPE_F32;
}
static void test_matvec_q4_f16(tctx *t) {
    test_f16_every_half(ML_TYPE_Q4_0, ml_k_matvec_q4_f16, "matvec_q4_f16");
    t->stype = ML_TYPE_F16;
    test_matvec(t, ML_TYPE_Q4_0, ml_k_matvec_q4_f16, ml_k_matvec_q4_f16_scalar, "matvec_q4_f16");
    t->stype = ML_TYPE_F32;
}
static void test_matmul_q8_f16(tctx *t) {
    t->stype = ML_TYPE_F16;
    test_matmul(t, ML_TYPE_Q8_0, ml_k_matmul_q8_f16, ml_k_matmul_q8_f16_scalar, ml_k_matvec_q8_f16_scalar,
                "matmul_q8_f16");
    t->stype = ML_TYPE_F32;
}
static void test_matmul_q4_f16(tctx *t) {
    t->stype = ML_TYPE_F16;
    test_matmul(t, ML_TYPE_Q4_0, ml_k_matmul_q4_f16, ml_k_matmul_q4_f16_scalar, ml_k_matvec_q4_f16_scalar,
                "matmul_q4_f16");
    t->stype = ML_TYPE_F32;
}
static void test_dequant_row_q8_f16(tctx *t) {
    t->stype = ML_TYPE_F16;
    test_dequant(t, ML_TYPE_Q8_0, ml_k_dequant_row_q8_f16, ml_k_dequant_row_q8_f16_scalar, "dequant_row_q8_f16");
    t->stype = ML_TYPE_F32;
}
static void test_dequant_row_q4_f16(tctx *t) {
    t->stype = ML_TYPE_F16;
    test_dequant(t, ML_TYPE_Q4_0, ml_k_dequant_row_q4_f16, ml_k_dequant_row_q4_f16_scalar, "dequant_row_q4_f16");
    t->stype = ML_TYPE_F32;
}
/* ---- the weight layout (core/pack.h) ------------------------------------ */

/* W's copy, rearranged as the loader does for a build that asks for
 * ML_LAYOUT_R16; each quant byte and scale checked at the place
 * core/pack.h gives it (rows past the last full group: unmoved). */
static ml_qtensor packed_copy(const ml_qtensor *W, const char *name) {
    const int nb = W->cols / ML_QK, bpb = W->type == ML_TYPE_Q4_0 ? ML_Q4_BLOCK_BYTES : ML_Q8_BLOCK_BYTES;
    const int sb = (int)ml_scale_bytes((ml_type)W->stype);
    ml_qtensor P = ref_qtensor((ml_type)W->type, W->rows, W->cols);
    P.stype = W->stype;
    memcpy(P.q, W->q, (size_t)W->rows * (size_t)nb * (size_t)bpb);
    memcpy(P.d, W->d, (size_t)W->rows * (size_t)nb * (size_t)sb);
    void *scratch = ref_alloc(ml_pack_r16_scratch(W));
    ml_pack_r16(&P, scratch);
    ref_free(scratch);
    int bad = P.layout != ML_LAYOUT_R16;
    const unsigned char *q = (const unsigned char *)W->q, *pq = (const unsigned char *)P.q;
    const unsigned char *d = (const unsigned char *)W->d, *pd = (const unsigned char *)P.d;
    for (int r = 0; r < W->rows; r++)
        for (int b = 0; b < nb; b++) {
            const int g = r / 16, i = r % 16, full = r < W->rows / 16 * 16;
            for (int k = 0; k < bpb; k++) {
                const size_t at = full ? (size_t)(16 * g * nb + 16 * b) * (size_t)bpb + (size_t)(64 * (k / 4) + 4 * i + k % 4)
                                       : ((size_t)r * (size_t)nb + (size_t)b) * (size_t)bpb + (size_t)k;
                bad |= pq[at] != q[((size_t)r * (size_t)nb + (size_t)b) * (size_t)bpb + (size_t)k];
            }
            const size_t sat = full ? (size_t)(16 * g * nb + 16 * b + i) : (size_t)r * (size_t)nb + (size_t)b;
            bad |= memcmp(pd + sat * (size_t)sb, d + ((size_t)r * (size_t)nb + (size_t)b) * (size_t)sb, (size_t)sb) != 0;
        }
    CHECK(!bad, "%s: ml_pack_r16 rows=%d K=%d: a byte or scale not where core/pack.h puts it", name, W->rows, W->cols);
    return P;
}

/* rows x K, one mode: the build's matvec and matmul over the packed copy
 * against the scalar kernels over the row-major matrix, bit for bit, on
 * row ranges as ops splits them (multiples of 16, the last ending at rows);
 * every other row untouched. */
static void layout_case(tctx *t, ml_type type, int rows, int K, int mode, int pack) {
    const int f16 = t->stype == ML_TYPE_F16;
    const matvec_fn mv = type == ML_TYPE_Q8_0 ? (f16 ? ml_k_matvec_q8_f16 : ml_k_matvec_q8)
                                              : (f16 ? ml_k_matvec_q4_f16 : ml_k_matvec_q4);
    const matvec_fn mv_sc = type == ML_TYPE_Q8_0 ? (f16 ? ml_k_matvec_q8_f16_scalar : ml_k_matvec_q8_scalar)
                                                 : (f16 ? ml_k_matvec_q4_f16_scalar : ml_k_matvec_q4_scalar);
    const matmul_fn mm = type == ML_TYPE_Q8_0 ? (f16 ? ml_k_matmul_q8_f16 : ml_k_matmul_q8)
                                              : (f16 ? ml_k_matmul_q4_f16 : ml_k_matmul_q4);
    const matmul_fn mm_sc = type == ML_TYPE_Q8_0 ? (f16 ? ml_k_matmul_q8_f16_scalar : ml_k_matmul_q8_scalar)
                                                 : (f16 ? ml_k_matmul_q4_f16_scalar : ml_k_matmul_q4_scalar);
    const char *name = type == ML_TYPE_Q8_0 ? (f16 ? "q8_0 f16 scales" : "q8_0") : (f16 ? "q4_0 f16 scales" : "q4_0");
    const int nb = K / ML_QK, toks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 24, 32, 33}, max_tok = 33;
    ml_qtensor W = ref_qtensor(type, rows, K);
    ml_qbatch X = {(int8_t *)ref_alloc((size_t)max_tok * (size_t)K), ref_floats((size_t)max_tok * (size_t)nb), K, max_tok};
    ml_qact x0 = ref_qact(K);
    for (int tk = 0; tk < max_tok; tk++) {
        fill_matvec(t, &W, &x0, mode);
        memcpy(X.q + (size_t)tk * (size_t)K, x0.q, (size_t)K);
        memcpy(X.d + (size_t)tk * (size_t)nb, x0.d, (size_t)nb * sizeof(float));
    }
    ml_qtensor P = pack ? packed_copy(&W, name) : W;
    const size_t ny = (size_t)max_tok * (size_t)rows;
    float *yi = ref_floats(ny + GUARD), *ys = ref_floats(ny + GUARD);
    const int full = rows / 16 * 16;
    const int r0s[] = {0, 16, 0, 16}, r1s[] = {rows, rows, full, full < 32 ? full : 32};
    for (int c = 0; c < 4; c++) {
        const int r0 = r0s[c], r1 = r1s[c];
        if (r0 >= r1) continue;
        reset_y(yi, (int)ny);
        reset_y(ys, (int)ny);
        mv(yi, &P, &x0, r0, r1);
        mv_sc(ys, &W, &x0, r0, r1);
        int bad = !guard_ok(yi, (int)ny);
        for (int r = 0; r < rows; r++) bad |= !ref_same_bits(yi[r], ys[r]);
        CHECK(!bad, "%s matvec, layout %d: rows=%d K=%d mode=%d [%d,%d): not the scalar's bits (or outside)", name,
              P.layout, rows, K, mode, r0, r1);
        for (int ti = 0; ti < (int)(sizeof toks / sizeof *toks); ti++) {
            X.n_tok = toks[ti];
            reset_y(yi, (int)ny);
            reset_y(ys, (int)ny);
            mm(yi, rows, &P, &X, r0, r1);
            mm_sc(ys, rows, &W, &X, r0, r1);
            bad = !guard_ok(yi, (int)ny); /* and the tokens past n_tok untouched, as the scalar's */
            for (size_t i = 0; i < ny; i++) bad |= !ref_same_bits(yi[i], ys[i]);
            CHECK(!bad, "%s matmul, layout %d: rows=%d K=%d n_tok=%d mode=%d [%d,%d): not the scalar's bits", name,
                  P.layout, rows, K, X.n_tok, mode, r0, r1);
        }
    }
    if (pack) ref_qtensor_free(&P);
    ref_free(yi);
    ref_free(ys);
    ref_free(X.q);
    ref_free(X.d);
    ref_qact_free(&x0);
    ref_qtensor_free(&W);
}

/* The layout each weight type asks for; with ML_LAYOUT_R16, its kernels
 * over packed matrices (full groups, a tail of rows, none) at block counts
 * around the kernels' chunks of 16, in every input mode and streaming mode (x86). */
static void test_weight_layout(tctx *t) {
    int before = tl_failed;
    const ml_type types[2] = {ML_TYPE_Q8_0, ML_TYPE_Q4_0};
    const int rows_list[] = {5, 16, 37, 64}, ks[] = {32, 96, 480, 544, 2048};
    for (int s = 0; s < 2; s++) {
        t->stype = s ? ML_TYPE_F16 : ML_TYPE_F32;
        for (int ty = 0; ty < 2; ty++) {
            const int layout = ml_k_weight_layout(types[ty], t->stype);
            CHECK(layout == ML_LAYOUT_ROWS || layout == ML_LAYOUT_R16, "weight_layout: %d is no layout", layout);
            for (int ri = 0; ri < (int)(sizeof rows_list / sizeof *rows_list); ri++)
                for (int ki = 0; ki < (int)(sizeof ks / sizeof *ks); ki++) {
                    const int rows = rows_list[ri], K = ks[ki];
                    if (t->quick && K > 544 && rows > 16) continue;
                    /* quick mode: a row-major layout is the very matrices the
                     * matvec and matmul groups sweep; short rows suffice */
                    if (t->quick && layout == ML_LAYOUT_ROWS && K > 96) continue;
                    layout_case(t, types[ty], rows, K, MV_SCALED, layout == ML_LAYOUT_R16);
                    if (K <= 544) {
                        layout_case(t, types[ty], rows, K, MV_EXTREME, layout == ML_LAYOUT_R16);
                        layout_case(t, types[ty], rows, K, MV_TINY, layout == ML_LAYOUT_R16);
                    }
#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
                    const int mode = ml_stream(); /* the other streaming modes (core/tune.h) */
                    for (int m = ML_STREAM_L2; m <= ML_STREAM_HW; m++) {
                        if (m == mode) continue;
                        ml_set_stream(m);
                        layout_case(t, types[ty], rows, K, MV_SCALED, layout == ML_LAYOUT_R16);
                    }
                    ml_set_stream(mode);
#endif
                }
        }
    }
    t->stype = ML_TYPE_F32;
    char what[200];
    snprintf(what, sizeof what,
             "weight_layout (q8_0 %s, q4_0 %s): bytes where core/pack.h puts them, matvec and matmul over them = the "
             "scalar's bits, ranges of 16 rows, tails, all modes",
             ml_k_weight_layout(ML_TYPE_Q8_0, ML_TYPE_F32) == ML_LAYOUT_R16 ? "R16" : "rows",
             ml_k_weight_layout(ML_TYPE_Q4_0, ML_TYPE_F32) == ML_LAYOUT_R16 ? "R16" : "rows");
    GROUP_DONE(what, before);
}

#define test_quantize_q8 test_quantize
#define test_add test_vec
#define test_dot_f32 test_vec
#define test_axpy_f32 test_vec
#define test_attn_scores test_attn
#define test_attn_values test_attn
#define TEST_ROW(ret, name, NAME, params) test_##name,
static const test_group kernel_tests[] = {ML_KERNELS(TEST_ROW)};

/* ---- main --------------------------------------------------------------- */

int ml_main(int argc, char **argv) {
    ref_opts o = ref_parse_opts(argc, argv);
    tctx t = {{o.seed}, o.quick, ML_TYPE_F32};
    printf("# test_kernels seed=0x%llx%s (rerun: --seed=0x%llx)\n", (unsigned long long)o.seed,
           o.quick ? " quick" : "", (unsigned long long)o.seed);
    check_bindings();

    size_t n = sizeof kernel_tests / sizeof *kernel_tests;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && kernel_tests[j] != kernel_tests[i]) j++;
        if (j == i) kernel_tests[i](&t); /* each group once */
    }
    return tl_summary();
}

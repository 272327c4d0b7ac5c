/* 16-row matvec body for the avx512vnni build (Q8_0 and Q4_0): the 16 float
 * lanes of one accumulator are 16 rows, so no row is ever summed
 * horizontally on its own.
 *
 * Float order (kernels/canon.h rule 5, bit-identical to the scalar twin):
 * each row (lane) accumulates sequentially over its blocks,
 *     sum += (float)sumi * (dw * dx),   sumi the exact int32 block dot,
 * with separate multiplies and adds.
 *
 * A step is 4 blocks of every row (avx512_dot.h: Q8_0 128 bytes, Q4_0 64
 * bytes per row): each row's dot leaves block c's partial sums in 128-bit
 * chunk c (unsigned weights, no sign handling, the offset removed by the
 * accumulator's start value). The 16 rows' dots reduce at once by a
 * transpose-and-add tree (ml_avx512_sums16) to one vector per block whose
 * lane i is row i's exact sumi. The scales of 16 rows x 16 blocks come from
 * one 16x16 transpose (rows' scales are strided by nb), multiplied by dx.
 * Of the last nb % 4 blocks, 3 go as a step with masked loads (zeros in the
 * missing block); 1 or 2 go one at a time (ml_avx512_dot16: 2 or 4 rows per
 * register, a cheaper tree). A group of fewer than 16 rows repeats its last
 * row in the missing lanes and stores only its own: each row's arithmetic
 * is the same in every case, so a row's result does not depend on how the
 * caller split [r0, r1) (for a packed matrix, ML_LAYOUT_R16, at multiples
 * of 16: ml_avx512_r16_rows).
 *
 * With the Zen 5 streaming (ML_STREAM_L1, core/tune.h), Q8_0 reads each full chunk of 16
 * blocks row by row instead (ml_avx512_runs): the same dots, tree and
 * float order, another read order.
 * The primitives are avx512_dot.h's, for weights of type t (ML_TYPE_Q8_0
 * or ML_TYPE_Q4_0, a constant after inlining): ml_avx512_xprep (a step's
 * activations), ml_avx512_dot (a row's dot of a step, block c's partial
 * sums in chunk c), ml_avx512_dot16 (one block of 16 rows -> [sumi of rows
 * 0..15]), ml_avx512_sums16 (16 rows' step dots -> per block sumi),
 * ml_avx512_wbytes and ml_avx512_pf_rows. kernels/avx512vnni/matvec_q8.c
 * and matvec_q4.c export ml_avx512_matvec under their kernel names. */
#ifndef ML_AVX512_MATVEC_BODY_H
#define ML_AVX512_MATVEC_BODY_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "config/ml_kernels.h"
#include "core/tune.h"
#include "kernels/avx512vnni/avx512_dot.h"
#include "kernels/kernel_util.h"

/* s[j] = [dw of rows 0..15 at block b0 + j] for j < n (n <= 16); s[j] for
 * j >= n is left alone. wd's scales are of type st (ml_avx512_ld16s). */
ML_INLINE void ml_avx512_dw16(__m512 *s, const void *wd, size_t nb, int nr, int b0, int n, ml_type st) {
    const __mmask16 m = (__mmask16)((1u << n) - 1u);
    __m512i t[16], u[16];
    ML_UNROLL for (int i = 0; i < 16; i += 2) {
        const __m512 a = ml_avx512_ld16s(wd, ml_avx512_row(i, nr) * nb + (size_t)b0, m, st);
        const __m512 b = ml_avx512_ld16s(wd, ml_avx512_row(i + 1, nr) * nb + (size_t)b0, m, st);
        t[i] = _mm512_castps_si512(_mm512_unpacklo_ps(a, b));
        t[i + 1] = _mm512_castps_si512(_mm512_unpackhi_ps(a, b));
    }
    /* u[4g + e], chunk c: rows 4g..4g+3 of column 4c + e */
    ML_UNROLL for (int g = 0; g < 4; g++) {
        const __m512i t0 = t[4 * g], t1 = t[4 * g + 1], t2 = t[4 * g + 2], t3 = t[4 * g + 3];
        u[4 * g + 0] = _mm512_unpacklo_epi64(t0, t2);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t0, t2);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t1, t3);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t1, t3);
    }
    ML_UNROLL for (int e = 0; e < 4; e++) {
        __m512i o[4];
        ml_avx512_chunks4x4(o, u[e], u[4 + e], u[8 + e], u[12 + e]);
        ML_UNROLL for (int c = 0; c < 4; c++) {
            const int j = 4 * c + e;
            if (j < n) s[j] = _mm512_castsi512_ps(o[c]);
        }
    }
}

/* s[j] = ml_avx512_dw16's * dx[b0 + j] (xd: dx[b0]): a block's dw * dx, for j < n. */
ML_INLINE void ml_avx512_scales16(__m512 *s, const void *wd, size_t nb, int nr, int b0, int n, const float *xd,
                                  ml_type st) {
    ml_avx512_dw16(s, wd, nb, nr, b0, n, st);
    ML_UNROLL for (int j = 0; j < 16; j++)
        if (j < n) s[j] = _mm512_mul_ps(s[j], _mm512_set1_ps(xd[j]));
}

/* Keep p in a register as computed: the compiler would otherwise hoist the
 * 16 row addresses out of the loops and spill them. */
#if defined(__GNUC__) || defined(__clang__)
#define ML_AVX512_OPAQUE(p) __asm__("" : "+r"(p))
#else
#define ML_AVX512_OPAQUE(p) ((void)0)
#endif

/* g[i] = a + row i * s: for a full group, 4 bases and s, 2s, 3s. */
ML_INLINE void ml_avx512_addrs(const int8_t **g, const int8_t *a, size_t s, int nr) {
    if (nr == 16) {
        const int8_t *b0 = a, *b1 = a + 4 * s, *b2 = a + 8 * s, *b3 = a + 12 * s;
        ML_AVX512_OPAQUE(b0);
        ML_AVX512_OPAQUE(b1);
        ML_AVX512_OPAQUE(b2);
        ML_AVX512_OPAQUE(b3);
        const int8_t *bk[4] = {b0, b1, b2, b3};
        ML_UNROLL for (int i = 0; i < 16; i++) g[i] = bk[i / 4] + (size_t)(i % 4) * s;
    } else {
        ML_UNROLL for (int i = 0; i < 16; i++) g[i] = a + ml_avx512_row(i, nr) * s;
    }
}

/* A step's prefetches, for a step of n (4 when full) blocks: pf: where the
 * bytes to prefetch start (16 steps of a row of them), pfd: where their
 * scales do (16 rows x 4 bytes is a line a block; fp16 scales (st), half
 * a line); mode: core/tune.h's streaming (ml_avx512_pf, _pf_scales). */
ML_INLINE void ml_avx512_pf_step(uintptr_t pf, uintptr_t pfd, int n, ml_type t, ml_type st, int mode) {
    const size_t wb = ml_avx512_wbytes(t);
    ML_UNROLL for (int l = 0; l < 4; l++)
        if (l < n && (st == ML_TYPE_F32 || 2 * l < n)) ml_avx512_pf_scales(pfd + (size_t)l * 64, mode);
    ML_UNROLL for (int i = 0; i < 16; i++)
        ML_UNROLL for (size_t l = 0; l < 4 * wb; l += 64) ml_avx512_pf(pf + (size_t)i * 4 * wb + l, mode);
}

/* One step: n (4 when full) blocks starting at block b of every row,
 * prefetching as ml_avx512_pf_step. */
ML_INLINE __m512 ml_avx512_step(__m512 acc, const int8_t *wq, size_t wstride, int nr, size_t b, const int8_t *xq,
                                const __m512 *sc, int n, const int8_t *pf, uintptr_t pfd, ml_type t, ml_type st,
                                int mode) {
    const size_t wb = ml_avx512_wbytes(t);
    ml_avx512_pf_step((uintptr_t)pf, pfd, n, t, st, mode);
    ml_avx512_x4 xs;
    ml_avx512_xprep(&xs, xq + b * ML_QK, n, t);
    const int8_t *g[16];
    ml_avx512_addrs(g, wq + b * wb, wstride, nr);
    __m512i v[16];
    ML_UNROLL for (int i = 0; i < 16; i++) v[i] = ml_avx512_dot(g[i], n, &xs, t);
    __m512i s[4];
    ml_avx512_sums16(v, s);
    ML_UNROLL for (int j = 0; j < 4; j++)
        if (j < n) acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s[j]), sc[j]));
    return acc;
}

/* Q8_0's 16 blocks from block b0 of every row, in row runs: each row's
 * 512 bytes are read in one go (its 4 steps' dots wait in v, L1), then
 * the 16 rows' dots of each step reduce and add in block order as in
 * ml_avx512_step. The steps' order across rows reads 16 interleaved
 * streams of 128 bytes; in runs, the weights stream almost like one array
 * (Zen 5, 1 thread, TinyLlama's widths, the access pattern alone, with the
 * L1 prefetch: 28-31 GB/s against 19-25 for the steps with the L2 one).
 * Part of the Zen 5 tuning (core/tune.h), with the steps' prefetches into
 * L1, a row's share at a time. A row's last, shorter chunk goes by
 * steps: in runs its masked loads cost more than the order saves. */
ML_INLINE __m512 ml_avx512_runs(__m512 acc, const int8_t *wq, size_t wstride, int nr, int b0, const int8_t *xq,
                                const __m512 *sc, uintptr_t *pf, uintptr_t *pfd, ml_type st) {
    const ml_type t = ML_TYPE_Q8_0;
    const size_t wb = ml_avx512_wbytes(t), sb = (size_t)ml_scale_bytes(st);
    ml_avx512_x4 xs[4];
    ML_UNROLL for (int j = 0; j < 4; j++) ml_avx512_xprep(&xs[j], xq + (size_t)(b0 + 4 * j) * ML_QK, 4, t);
    __m512i v[4][16];
    for (int i = 0; i < 16; i++) {
        ML_UNROLL for (size_t l = 0; l < 16 * wb; l += 64) _mm_prefetch((const char *)(*pf + l), _MM_HINT_T0);
        ML_UNROLL for (size_t l = 0; l < 16 * sb; l += 64) _mm_prefetch((const char *)(*pfd + l), _MM_HINT_T0);
        *pf += 16 * wb;
        *pfd += 16 * sb;
        const int8_t *w = wq + ml_avx512_row(i, nr) * wstride + (size_t)b0 * wb;
        ML_UNROLL for (int j = 0; j < 4; j++) v[j][i] = ml_avx512_dot(w + (size_t)(4 * j) * wb, 4, &xs[j], t);
    }
    ML_UNROLL for (int j = 0; j < 4; j++) {
        __m512i s[4];
        ml_avx512_sums16(v[j], s);
        ML_UNROLL for (int c = 0; c < 4; c++)
            acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s[c]), sc[4 * j + c]));
    }
    return acc;
}

/* nr (16, or 1..15 for the last group) consecutive rows starting at y;
 * mode (a constant after inlining): core/tune.h's streaming, whose Zen 5
 * mode (ML_STREAM_L1) also reads Q8_0's full chunks in row runs. */
ML_INLINE void ml_avx512_rows(float *y, const int8_t *wq, size_t wstride, const void *wd, const int8_t *xq,
                              const float *xd, int nb, int nr, ml_type t, ml_type st, int mode) {
    const size_t wb = ml_avx512_wbytes(t), sb = (size_t)ml_scale_bytes(st);
    __m512 acc = _mm512_setzero_ps();
    /* The bytes and scales ml_avx512_pf_rows rows ahead, linearly, as
     * many per step as a step reads. Without the scales, each 16-block round of
     * ml_avx512_scales16 stalled on 16 DRAM misses: TinyLlama Q4_0 at 2 threads
     * streamed 20.4 GB/s instead of 24 (the scales are 20% of Q4_0's bytes).
     * The addresses are integers: past the matrix end they are never C
     * pointers, and prefetches do not fault. */
    uintptr_t pf = (uintptr_t)wq + ml_avx512_pf_rows(t, mode) * wstride;
    uintptr_t pfd = (uintptr_t)wd + ml_avx512_pf_rows(t, mode) * (size_t)nb * sb;
    for (int b0 = 0; b0 < nb; b0 += 16) {
        const int n = nb - b0 < 16 ? nb - b0 : 16;
        __m512 sc[16];
        ml_avx512_scales16(sc, wd, (size_t)nb, nr, b0, n, xd + b0, st);
        if (t == ML_TYPE_Q8_0 && n == 16 && mode == ML_STREAM_L1) {
            acc = ml_avx512_runs(acc, wq, wstride, nr, b0, xq, sc, &pf, &pfd, st);
            continue;
        }
        int j = 0;
        for (; j + 4 <= n; j += 4, pf += 16 * (4 * wb), pfd += 4 * 16 * sb)
            acc = ml_avx512_step(acc, wq, wstride, nr, (size_t)(b0 + j), xq, sc + j, 4, (const int8_t *)pf, pfd, t, st,
                                 mode);
        if (n - j > 2) {
            acc = ml_avx512_step(acc, wq, wstride, nr, (size_t)(b0 + j), xq, sc + j, n - j, (const int8_t *)pf, pfd, t,
                                 st, mode);
        } else {
            for (; j < n; j++) { /* one or two blocks left: one at a time */
                const size_t b = (size_t)(b0 + j);
                const int8_t *g[16];
                ml_avx512_addrs(g, wq + b * wb, wstride, nr);
                ML_UNROLL for (size_t l = 0; l < 16 * wb; l += 64) ml_avx512_pf(pf + l, mode);
                ml_avx512_pf_scales(pfd, mode);
                pf += 16 * wb;
                pfd += 16 * sb;
                const __m512i s = ml_avx512_dot16(g, xq + b * ML_QK, t);
                acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s), sc[j]));
            }
        }
    }
    if (nr == 16)
        _mm512_storeu_ps(y, acc);
    else
        _mm512_mask_storeu_ps(y, (__mmask16)((1u << nr) - 1u), acc);
}

/* Bytes ahead of the reads that ml_avx512_r16_rows prefetches: its weights
 * are one linear stream. Zen 5, 1 thread, into L1: a loop of its reads,
 * Q8_0 2048x2048 x 20 from memory, 2, 4, 8 and 16 KiB ahead 32.6, 36.2,
 * 36.5 and 33.5 GB/s (the row-major steps: 19-25); the kernel, Q4_0 at
 * stories110M's widths (768x768 x 100, 2048x768 x 40, 2048x2048 x 20), 8
 * KiB 6.1-8.1 ns per 16 rows x block against 7.0-9.9 at 4 KiB, 4 rounds. */
#define ML_AVX512_R16_AHEAD 8192

/* Tokens ml_avx512_r16_rows takes at most (its accumulators in registers). */
#define ML_AVX512_R16_T 8

/* One full group of a packed matrix (core/pack.h, ML_LAYOUT_R16) for nt
 * (1 .. ML_AVX512_R16_T, a constant after inlining) tokens of X: gq, gd the
 * group's quants and scales, y token 0's 16 rows (token t's ldy further).
 * Block after block over the whole row, each block's vectors loaded once
 * for every token (ml_avx512_r16_block) and multiplied by the activation
 * bytes broadcast: lane i is row i's exact sumi, with no transpose and no
 * reduction tree; then the float step of ml_avx512_rows in the same block
 * order. The weights are one linear stream, prefetched ahead as mode says. */
ML_INLINE void ml_avx512_r16_rows(float *y, size_t ldy, const int8_t *gq, const void *gd, const ml_qbatch *X, int nt,
                                  ml_type t, ml_type st, int mode) {
    const int nb = X->n / ML_QK;
    const size_t bb = 16 * ml_avx512_wbytes(t), sb = (size_t)ml_scale_bytes(st);
    const uintptr_t pf = (uintptr_t)gq + ML_AVX512_R16_AHEAD;
    const uintptr_t pfd = (uintptr_t)gd + ML_AVX512_R16_AHEAD / bb * 16 * sb;
    __m512 acc[ML_AVX512_R16_T];
    ML_UNROLL for (int k = 0; k < ML_AVX512_R16_T; k++)
        if (k < nt) acc[k] = _mm512_setzero_ps();
    for (int b0 = 0; b0 < nb; b0 += 16) {
        const int n = nb - b0 < 16 ? nb - b0 : 16;
        int32_t cx[ML_AVX512_R16_T][16]; /* -off * sum(x) of each token's blocks */
        for (int k = 0; k < nt; k++) {
            const int8_t *x = X->q + (size_t)k * (size_t)X->n + (size_t)b0 * ML_QK;
            __m512i q[8];
            ML_UNROLL for (int c = 0; c < 8; c++) q[c] = ml_avx512_load_n(x + 64 * c, n * ML_QK - 64 * c);
            _mm512_storeu_si512(cx[k], ml_avx512_xsums16(q, t));
        }
        for (int b = b0; b < b0 + n; b++) {
            ML_UNROLL for (size_t l = 0; l < bb; l += 64) ml_avx512_pf(pf + (size_t)b * bb + l, mode);
            ml_avx512_pf_scales(pfd + (size_t)b * 16 * sb, mode);
            __m512i w[8], s[ML_AVX512_R16_T];
            ml_avx512_r16_block(w, gq + (size_t)b * bb, t);
            ML_UNROLL for (int k = 0; k < ML_AVX512_R16_T; k++)
                if (k < nt) s[k] = _mm512_set1_epi32(cx[k][b - b0]);
            ML_UNROLL for (int j = 0; j < 8; j++)
                ML_UNROLL for (int k = 0; k < ML_AVX512_R16_T; k++)
                    if (k < nt)
                        s[k] = _mm512_dpbusd_epi32(
                            s[k], w[j], ml_avx512_bcast4(X->q + (size_t)k * (size_t)X->n + (size_t)b * ML_QK + 4 * j));
            const __m512 dw = ml_avx512_ld16s(gd, (size_t)b * 16, (__mmask16)0xFFFF, st);
            ML_UNROLL for (int k = 0; k < ML_AVX512_R16_T; k++) {
                if (k >= nt) continue;
                const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(X->d[(size_t)k * (size_t)nb + (size_t)b]));
                acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(_mm512_cvtepi32_ps(s[k]), sc));
            }
        }
    }
    ML_UNROLL for (int k = 0; k < ML_AVX512_R16_T; k++)
        if (k < nt) _mm512_storeu_ps(y + (size_t)k * ldy, acc[k]);
}

/* Group gq, gd of a packed matrix for the nt (1 .. ML_AVX512_R16_T)
 * tokens of x: ml_avx512_r16_rows with the count a constant, so that its
 * accumulators stay in registers. */
_Static_assert(ML_AVX512_R16_T == 8, "ml_avx512_r16_group has a case for each count");
ML_INLINE void ml_avx512_r16_group(float *y, size_t ldy, const int8_t *gq, const void *gd, const ml_qbatch *x,
                                    ml_type type, ml_type st, int mode) {
    switch (x->n_tok) {
    case 1: ml_avx512_r16_rows(y, ldy, gq, gd, x, 1, type, st, mode); break;
    case 2: ml_avx512_r16_rows(y, ldy, gq, gd, x, 2, type, st, mode); break;
    case 3: ml_avx512_r16_rows(y, ldy, gq, gd, x, 3, type, st, mode); break;
    case 4: ml_avx512_r16_rows(y, ldy, gq, gd, x, 4, type, st, mode); break;
    case 5: ml_avx512_r16_rows(y, ldy, gq, gd, x, 5, type, st, mode); break;
    case 6: ml_avx512_r16_rows(y, ldy, gq, gd, x, 6, type, st, mode); break;
    case 7: ml_avx512_r16_rows(y, ldy, gq, gd, x, 7, type, st, mode); break;
    default: ml_avx512_r16_rows(y, ldy, gq, gd, x, ML_AVX512_R16_T, type, st, mode); break;
    }
}

/* The full groups of a packed matrix W in rows [r0, r1) (r0 a multiple of
 * 16, and r1 too unless it is the last row) for the tokens of X, group
 * after group: each group streamed from memory by ml_avx512_r16_rows for
 * its first ML_AVX512_R16_T tokens, and read again from cache for each
 * further ML_AVX512_R16_T. Y: token 0's rows. Returns where they end: the
 * rows past the last full group are laid out row-major, as every row of
 * the other matrices. In the matmul's row tiles, made for long prompts, a
 * short batch left the memory idle while it computed (Zen 5, Q8_0
 * 2048x2048 x 20 from memory, ns per 16 rows x block: 8 tokens, the tiles
 * over packed groups 38.6, over row-major rows 34.2, streamed 24.5; Q4_0
 * 26.4, 25.4, 16.1). */
ML_INLINE int ml_avx512_r16_span(float *Y, size_t ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1,
                                 ml_type t, ml_type st, int mode) {
    const size_t nb = (size_t)(W->cols / ML_QK), bpb = ml_avx512_wbytes(t), sb = (size_t)ml_scale_bytes(st);
    int r = r0;
    for (; r + 16 <= r1 && r + 16 <= W->rows / 16 * 16; r += 16)
        for (int t0 = 0; t0 < X->n_tok; t0 += ML_AVX512_R16_T) {
            const int nt = X->n_tok - t0 < ML_AVX512_R16_T ? X->n_tok - t0 : ML_AVX512_R16_T;
            const ml_qbatch x = {X->q + (size_t)t0 * (size_t)X->n, X->d + (size_t)t0 * nb, X->n, nt};
            ml_avx512_r16_group(Y + (size_t)t0 * ldy + (size_t)r, ldy, W->q + (size_t)r * nb * bpb,
                                (const char *)W->d + (size_t)r * nb * sb, &x, t, st, mode);
        }
    return r;
}

/* rows [r0, r1), mode as in ml_avx512_rows; a packed matrix's full groups
 * through ml_avx512_r16_span. */
ML_INLINE void ml_avx512_matvec_pf(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, ml_type t,
                                   ml_type st, int mode) {
    const int nb = W->cols / ML_QK;
    const size_t wb = ml_avx512_wbytes(t), sb = (size_t)ml_scale_bytes(st);
    const size_t wstride = (size_t)nb * wb;
    const char *wd = (const char *)W->d;
    const ml_qbatch x1 = {x->q, x->d, x->n, 1};
    int r = W->layout == ML_LAYOUT_R16 ? ml_avx512_r16_span(y, 0, W, &x1, r0, r1, t, st, mode) : r0;
    for (; r + 16 <= r1; r += 16)
        ml_avx512_rows(y + r, W->q + (size_t)r * wstride, wstride, wd + (size_t)r * (size_t)nb * sb, x->q, x->d, nb,
                       16, t, st, mode);
    if (r < r1)
        ml_avx512_rows(y + r, W->q + (size_t)r * wstride, wstride, wd + (size_t)r * (size_t)nb * sb, x->q, x->d, nb,
                       r1 - r, t, st, mode);
}

/* How n_tok tokens of matrix W of type t stream: core/tune.h's mode, but
 * ML_STREAM_HW (Zen 4) is, for 1 or 2 tokens of a packed matrix (one
 * linear stream: the weights read into memory), Q8_0 without software
 * prefetches and Q4_0 into L1; the rest prefetches into L2: row-major
 * matrices (a mapped file's, read 16 rows at a time) and batches of 3 or
 * more. TinyLlama, 1 thread: mapped, Q8_0 left to the hardware decoded
 * 0.72x as fast, Q4_0 into L1 0.49x; Q8_0 batches of 2 tokens ran 1.25x
 * faster without prefetches, 4 tokens 1.2-1.3x slower, 8 at half the speed;
 * Q4_0's 8 tokens 1.07x slower into L1; Q8_0 rows shorter than 2048 (Qwen3
 * 0.6B's 1024, stories110M's 768, SmolLM2's 576) decoded 1.1-1.3x faster
 * without prefetches too (docs/PERF.md "AMD Zen 4, the hardware
 * prefetchers" and "every Q8_0 row"). */
ML_INLINE int ml_avx512_stream(const ml_qtensor *W, ml_type t, int n_tok) {
    const int m = ml_stream();
    if (m != ML_STREAM_HW) return m;
    if (n_tok > 2 || W->layout != ML_LAYOUT_R16) return ML_STREAM_L2;
    return t == ML_TYPE_Q4_0 ? ML_STREAM_L1 : ML_STREAM_HW;
}

/* CALL(mode) with mode ml_avx512_stream's MODE as a constant: a copy of
 * the kernel for each. */
#define ML_AVX512_BY_STREAM(MODE, CALL)                                                                                \
    switch (MODE) {                                                                                                    \
    case ML_STREAM_L1: CALL(ML_STREAM_L1); break;                                                                      \
    case ML_STREAM_HW: CALL(ML_STREAM_HW); break;                                                                      \
    default: CALL(ML_STREAM_L2); break;                                                                                \
    }

ML_INLINE void ml_avx512_matvec(float *y, const ml_qtensor *W, const ml_qact *x, int r0, int r1, ml_type t,
                                ml_type st) {
#define ML_AVX512_MATVEC(mode) ml_avx512_matvec_pf(y, W, x, r0, r1, t, st, mode)
    ML_AVX512_BY_STREAM(ml_avx512_stream(W, t, 1), ML_AVX512_MATVEC)
#undef ML_AVX512_MATVEC
}

/* ---- a few tokens at once (the matmul of a small batch) ------------------- */

/* Tokens per pass of ml_avx512_rows_nt: the weights stream from memory once
 * per pass. Beyond 4, the matmul's transposes (matmul_body.h) win. */
#define ML_AVX512_NT 4

/* The matvec of nt (1..ML_AVX512_NT) tokens over nr rows: the steps and
 * prefetches of ml_avx512_rows into L2 whatever the tuning, but each step's
 * 16 rows are loaded and made unsigned once (w, on the stack: L1) and
 * serve every token; each token then does the matvec's dots, tree and
 * float order, so each (row, token) is the matvec's, bit for bit. A step
 * short of 4 blocks, at a row's end, goes masked (ml_avx512_rows sends 1 or 2 blocks one at a time:
 * the same sums). xq, xd: token 0's quants and scales; token k's are xn
 * and nb further on; y: token 0's rows, token k's ldy further on. */
ML_INLINE void ml_avx512_rows_nt(float *y, size_t ldy, const int8_t *wq, size_t wstride, const void *wd,
                                 const int8_t *xq, size_t xn, const float *xd, int nb, int nr, int nt, ml_type t,
                                 ml_type st) {
    const size_t wb = ml_avx512_wbytes(t), sb = (size_t)ml_scale_bytes(st);
    __m512 acc[ML_AVX512_NT];
    for (int k = 0; k < nt; k++) acc[k] = _mm512_setzero_ps();
    uintptr_t pf = (uintptr_t)wq + ml_avx512_pf_rows(t, ML_STREAM_L2) * wstride;
    uintptr_t pfd = (uintptr_t)wd + ml_avx512_pf_rows(t, ML_STREAM_L2) * (size_t)nb * sb;
    for (int b0 = 0; b0 < nb; b0 += 16) {
        const int n = nb - b0 < 16 ? nb - b0 : 16;
        __m512 dw[16];
        ml_avx512_dw16(dw, wd, (size_t)nb, nr, b0, n, st);
        for (int j = 0; j < n; j += 4) {
            const int ns = n - j < 4 ? n - j : 4;
            const size_t b = (size_t)(b0 + j);
            ml_avx512_pf_step(pf, pfd, ns, t, st, ML_STREAM_L2);
            pf += 16 * ((size_t)ns * wb);
            pfd += (size_t)ns * 16 * sb;
            const int8_t *g[16];
            ml_avx512_addrs(g, wq + b * wb, wstride, nr);
            __m512i w[16][2];
            ML_UNROLL for (int i = 0; i < 16; i++) ml_avx512_wload(&w[i][0], &w[i][1], g[i], ns, t);
            for (int k = 0; k < nt; k++) {
                ml_avx512_x4 xs;
                ml_avx512_xprep(&xs, xq + (size_t)k * xn + b * ML_QK, ns, t);
                __m512i v[16], sum[4];
                ML_UNROLL for (int i = 0; i < 16; i++) v[i] = ml_avx512_dot4(w[i][0], w[i][1], &xs);
                ml_avx512_sums16(v, sum);
                const float *dx = xd + (size_t)k * (size_t)nb + b;
                ML_UNROLL for (int c = 0; c < 4; c++)
                    if (c < ns)
                        acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(_mm512_cvtepi32_ps(sum[c]),
                                                                     _mm512_mul_ps(dw[j + c], _mm512_set1_ps(dx[c]))));
            }
        }
    }
    const __mmask16 m = (__mmask16)((1u << nr) - 1u);
    for (int k = 0; k < nt; k++) _mm512_mask_storeu_ps(y + (size_t)k * ldy, m, acc[k]);
}

/* Y[k*ldy + r] = W[r,:] . X[k] for the batch's tokens and rows [r0, r1),
 * ML_AVX512_NT tokens per pass over the weights: for a small batch (a
 * speculative draft) of Q4_0 weights, where the matmul's transposes
 * (matmul_body.h) cost more than they save. */
ML_INLINE void ml_avx512_matmul_nt(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1,
                                   ml_type t, ml_type st) {
    const int nb = W->cols / ML_QK;
    const size_t wb = ml_avx512_wbytes(t), sb = (size_t)ml_scale_bytes(st);
    const size_t wstride = (size_t)nb * wb, xn = (size_t)X->n;
    const char *wd = (const char *)W->d;
    for (int k0 = 0; k0 < X->n_tok; k0 += ML_AVX512_NT) {
        const int nt = X->n_tok - k0 < ML_AVX512_NT ? X->n_tok - k0 : ML_AVX512_NT;
        for (int r = r0; r < r1; r += 16)
            ml_avx512_rows_nt(Y + (size_t)k0 * (size_t)ldy + (size_t)r, (size_t)ldy, W->q + (size_t)r * wstride, wstride,
                              wd + (size_t)r * (size_t)nb * sb, X->q + (size_t)k0 * xn, xn,
                              X->d + (size_t)k0 * (size_t)nb, nb, r1 - r < 16 ? r1 - r : 16, nt, t, st);
    }
}

#endif

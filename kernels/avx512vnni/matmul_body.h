/* The avx512vnni matmul body (Q8_0 and Q4_0, the weight type a constant
 * after inlining): Y[t*ldy + r] = W[r,:] . X[t] for the batch's tokens and
 * rows [r0, r1), over avx512_dot.h's primitives (ml_avx512_ublock2: a
 * row's block as unsigned bytes, ml_avx512_off: their offset). Register
 * tiles hold 16 rows in the 16 int32 / float lanes and a few tokens per
 * pass, so that no (row, token) dot is ever summed horizontally.
 *
 * A weight block of 16 rows is transposed once per call into 8 vectors:
 * vector j, lane i = row i's bytes 4j .. 4j+3, unsigned (Q8_0 as w ^ 0x80
 * = w + 128, Q4_0 unpacked nibbles w + 8; Q4_0 is transposed packed, a
 * quarter of the shuffles). A token's block then costs 8
 * vpdpbusd of those vectors by its 4 activation bytes 4j .. 4j+3, broadcast
 * to every lane straight from memory: lane i ends with row i's block dot,
 * for 16 rows at once, with no shuffle. The weights' offset off is removed
 * by starting the sum at -off * sum(x) of the token's block (mm512_xprep, once
 * per token and block for all rows), so it is exactly sum w x (int32, wraps
 * but never saturates).
 *
 * A matrix laid out in 16-row groups (core/pack.h, ML_LAYOUT_R16: the
 * weights this process read) holds those vectors already: its full groups
 * are loaded instead of transposed (mm512_wprep_r16), and a batch of at
 * most 16 or 32 tokens (mm512_r16_batch) streams them group after group with
 * the matvec's body (ml_avx512_r16_span, matvec_body.h). On a row-major
 * matrix, a small Q4_0 batch (mm512_small_batch) goes to the matvec's
 * steps instead (ml_avx512_matmul_nt, matvec_body.h): below 5 tokens the
 * transposes cost more than the steps' reductions they save.
 *
 * Loop order (mm512_matmul, at the end): a row tile (MM512_GROUPS
 * groups of 16 rows) and a chunk of MM512_KB blocks are transposed once into
 * wt (stack, 36 KiB), then every token passes over them; a token tile's
 * activations are copied (xq, stack, 32 KiB) and their block sums made (cx,
 * 4 KiB) once per chunk for all the row tile's groups. The weights are read
 * from memory once per call, in place (never converted where they are
 * mapped).
 *
 * Float order (kernels/canon.h rule 5): each lane, for its (row, token),
 * adds (float)sumi * (dw * dx) block after block, separate mul and add,
 * from 0.0f; between chunks of blocks the running sum waits in Y itself. */
#ifndef ML_AVX512_MATMUL_BODY_H
#define ML_AVX512_MATMUL_BODY_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "config/ml_kernels.h"
#include "kernels/avx512vnni/avx512_dot.h"
#include "kernels/avx512vnni/matvec_body.h"
#include "kernels/kernel_util.h"

#define MM512_KB 16 /* blocks per chunk: mm512_xprep sums 16 at a time */
#define MM512_T 8   /* tokens per register tile */

/* One 16-row group's chunk of weights, transposed. */
typedef struct {
    __m512i w[MM512_KB][8]; /* (block, 4-byte column): lane i = row i */
    __m512 d[MM512_KB];     /* the rows' block scales */
} mm512_wtile;

/* The 4 dword columns of z[0..3]'s 128-bit chunks, one lane apart:
 * p[j], chunk c = [z[0] z[1] z[2] z[3]: chunk c, dword j]. */
ML_INLINE void mm512_dwords4x4(__m512i *p, const __m512i *z) {
    const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]), t1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]), t3 = _mm512_unpackhi_epi32(z[2], z[3]);
    p[0] = _mm512_unpacklo_epi64(t0, t2);
    p[1] = _mm512_unpackhi_epi64(t0, t2);
    p[2] = _mm512_unpacklo_epi64(t1, t3);
    p[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* Row i's block: r[i % 4] + (i / 4) * s4 for a full group (four row
 * pointers and 4 rows' stride: the compiler would otherwise keep 16
 * pointers, spilled to vector registers and moved back one by one), or
 * g[i] for a group short of 16 rows (r NULL; the missing rows repeat its
 * last). */
ML_INLINE const int8_t *mm512_row(const int8_t *const *r, size_t s4, const int8_t *const *g, int i) {
    return r ? r[i % 4] + (size_t)(i / 4) * s4 : g[i];
}

/* Q4_0's block b: its 16 bytes per row are transposed packed, then
 * unpacked. z[k], chunk c = row 4c + k's bytes (inserts from memory, which
 * need not go to the shuffle port); p[j], lane i = row i's packed bytes
 * 4j .. 4j + 3, whose low nibbles are elements 4j .. 4j + 3 (vector j)
 * and high nibbles 16 + 4j .. (vector 4 + j): 8 shuffles a block instead
 * of the 32 that transposing the unpacked bytes takes. */
ML_INLINE void mm512_wprep_block_q4(mm512_wtile *wt, int b, const int8_t *const *r, size_t s4,
                                    const int8_t *const *g) {
    __m512i z[4], p[4];
    ML_UNROLL for (int k = 0; k < 4; k++) {
        const __m128i *c0 = (const __m128i *)mm512_row(r, s4, g, k), *c1 = (const __m128i *)mm512_row(r, s4, g, 4 + k);
        const __m128i *c2 = (const __m128i *)mm512_row(r, s4, g, 8 + k), *c3 = (const __m128i *)mm512_row(r, s4, g, 12 + k);
        z[k] = _mm512_inserti32x4(_mm512_castsi128_si512(_mm_loadu_si128(c0)), _mm_loadu_si128(c1), 1);
        z[k] = _mm512_inserti32x4(z[k], _mm_loadu_si128(c2), 2);
        z[k] = _mm512_inserti32x4(z[k], _mm_loadu_si128(c3), 3);
    }
    mm512_dwords4x4(p, z);
    const __m512i m = _mm512_set1_epi8(0x0F);
    ML_UNROLL for (int j = 0; j < 4; j++) {
        wt->w[b][j] = _mm512_and_si512(p[j], m);
        wt->w[b][4 + j] = _mm512_and_si512(_mm512_srli_epi16(p[j], 4), m);
    }
}

/* Q8_0's block b (of the chunk) of a group, rows as mm512_row. */
ML_INLINE void mm512_wprep_block_q8(mm512_wtile *wt, int b, const int8_t *const *r, size_t s4,
                                    const int8_t *const *g) {
    /* z[p] = rows (p, p + 4) for p < 4, (p + 4, p + 8) after: the 8x8
     * dword transposes of both 256-bit halves then come out in row order */
    __m512i z[8], t[8], u[8];
    ML_UNROLL for (int p = 0; p < 8; p++) {
        const int ra = p < 4 ? p : p + 4;
        z[p] = ml_avx512_ublock2(mm512_row(r, s4, g, ra), mm512_row(r, s4, g, ra + 4), ML_TYPE_Q8_0);
    }
    ML_UNROLL for (int k = 0; k < 4; k++) {
        t[2 * k] = _mm512_unpacklo_epi32(z[2 * k], z[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi32(z[2 * k], z[2 * k + 1]);
    }
    ML_UNROLL for (int m = 0; m < 2; m++) {
        u[4 * m + 0] = _mm512_unpacklo_epi64(t[4 * m], t[4 * m + 2]);
        u[4 * m + 1] = _mm512_unpackhi_epi64(t[4 * m], t[4 * m + 2]);
        u[4 * m + 2] = _mm512_unpacklo_epi64(t[4 * m + 1], t[4 * m + 3]);
        u[4 * m + 3] = _mm512_unpackhi_epi64(t[4 * m + 1], t[4 * m + 3]);
    }
    ML_UNROLL for (int j = 0; j < 4; j++) {
        wt->w[b][j] = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(2, 0, 2, 0));
        wt->w[b][4 + j] = _mm512_shuffle_i32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* nb blocks of nr rows (<= 16) from row pointer q (bytes per row wstride,
 * per block bpb) and their scales d (nbt blocks per row, of type st),
 * transposed 16 blocks at a time (ml_avx512_dw16): once per call, for
 * every token of the batch. Meanwhile the first half of as many bytes as it
 * reads is prefetched into L2 from pf (16 bpb per block; mm512_tile
 * prefetches the other half and the scales). pf is an integer: past the
 * matrix end it is never a C pointer, and prefetches do not fault. */
ML_INLINE void mm512_wprep(mm512_wtile *wt, const int8_t *q, size_t wstride, size_t bpb, const void *d, size_t nbt,
                           int nr, int nb, ml_type type, ml_type st, uintptr_t pf) {
    for (int b = 0; b < nb; b++) {
        const int8_t *at = q + (size_t)b * bpb, *g[16];
        ML_UNROLL for (size_t l = 0; l < 8 * bpb; l += 64)
            _mm_prefetch((const char *)(pf + (size_t)b * 16 * bpb + l), _MM_HINT_T1);
        if (nr == 16) {
            const int8_t *r0 = at, *r1 = at + wstride, *r2 = at + 2 * wstride, *r3 = at + 3 * wstride;
            ML_AVX512_OPAQUE(r0);
            ML_AVX512_OPAQUE(r1);
            ML_AVX512_OPAQUE(r2);
            ML_AVX512_OPAQUE(r3);
            const int8_t *r[4] = {r0, r1, r2, r3};
            if (type == ML_TYPE_Q4_0)
                mm512_wprep_block_q4(wt, b, r, 4 * wstride, NULL);
            else
                mm512_wprep_block_q8(wt, b, r, 4 * wstride, NULL);
        } else {
            ml_avx512_addrs(g, at, wstride, nr);
            if (type == ML_TYPE_Q4_0)
                mm512_wprep_block_q4(wt, b, NULL, 0, g);
            else
                mm512_wprep_block_q8(wt, b, NULL, 0, g);
        }
    }
    ml_avx512_dw16(wt->d, d, nbt, nr, 0, nb, st);
}

/* The same for a full group of a packed matrix (core/pack.h), gq and gd
 * at its chunk's first block: the vectors are there already, a load (and
 * Q8_0's flip, Q4_0's unpack) each. */
ML_INLINE void mm512_wprep_r16(mm512_wtile *wt, const int8_t *gq, const void *gd, int nb, ml_type type, ml_type st,
                               uintptr_t pf) {
    const size_t bpb = ml_avx512_wbytes(type);
    for (int b = 0; b < nb; b++) {
        ML_UNROLL for (size_t l = 0; l < 8 * bpb; l += 64)
            _mm_prefetch((const char *)(pf + (size_t)b * 16 * bpb + l), _MM_HINT_T1);
        ml_avx512_r16_block(wt->w[b], gq + (size_t)b * 16 * bpb, type);
        wt->d[b] = ml_avx512_ld16s(gd, (size_t)b * 16, (__mmask16)0xFFFF, st);
    }
}

/* For block b0 + b of token t0 + t (nt tokens, nb blocks): its quants
 * copied to xq[t] (a fixed stride: the tiles address every token from one
 * register) and cx[t][b] = -off * sum(x) (a token's 16 blocks in one tree
 * of adds). */
_Static_assert(MM512_KB == 16, "mm512_xprep writes 16 sums per token");
ML_INLINE void mm512_xprep(int8_t (*xq)[MM512_KB * ML_QK], int32_t (*cx)[MM512_KB], const ml_qbatch *X, int t0, int nt,
                           int b0, int nb, ml_type type) {
    for (int t = 0; t < nt; t++) {
        const int8_t *x = X->q + (size_t)(t0 + t) * (size_t)X->n + (size_t)b0 * ML_QK;
        __m512i q[8];
        ML_UNROLL for (int k = 0; k < 8; k++) {
            q[k] = ml_avx512_load_n(x + 64 * k, nb * ML_QK - 64 * k);
            _mm512_storeu_si512(xq[t] + 64 * k, q[k]);
        }
        _mm512_storeu_si512(cx[t], ml_avx512_xsums16(q, type));
    }
}

/* nt (<= MM512_T) tokens of one group over nb blocks: acc from Y (or 0.0f on
 * the first chunk), back to Y. y: token 0's 16 rows; xd: token 0's scales
 * at the chunk's block 0 (n / 32 per token); xq, cx: mm512_xprep's, token 0.
 * Unless pf is 0, each block prefetches into L2 the second half of what
 * mm512_wprep prefetched for it from pf, and its scales from pfd (16 bpb and
 * 16 sb per block): the stream of the next row tile then runs through the
 * tokens' dots as well as through the transposes. With all of it in the
 * transposes, a short batch left the memory idle while it computed
 * (TinyLlama shape, 8 tokens, 1 thread: 1.6x (Q8_0) and 2.1x (Q4_0) a
 * decode step, about the sum of the two). */
ML_INLINE void mm512_tile(float *y, size_t ldy, __mmask16 m, int first, const mm512_wtile *wt, int nb,
                          const int8_t (*xq)[MM512_KB * ML_QK], const float *xd, size_t n,
                          const int32_t (*cx)[MM512_KB], int nt, uintptr_t pf, uintptr_t pfd, size_t bpb, size_t sb) {
    __m512 acc[MM512_T];
    ML_UNROLL for (int t = 0; t < MM512_T; t++)
        if (t < nt) acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, y + (size_t)t * ldy);
    for (int b = 0; b < nb; b++) {
        if (pf) {
            ML_UNROLL for (size_t l = 8 * bpb; l < 16 * bpb; l += 64)
                _mm_prefetch((const char *)(pf + (size_t)b * 16 * bpb + l), _MM_HINT_T1);
            _mm_prefetch((const char *)(pfd + (size_t)b * 16 * sb), _MM_HINT_T1);
        }
        __m512i w[8];
        ML_UNROLL for (int j = 0; j < 8; j++) w[j] = wt->w[b][j];
        const __m512 dw = wt->d[b];
        /* tokens innermost: their MM512_T dot chains interleave (one chain of
         * 8 vpdpbusd alone is latency bound) */
        __m512i s[MM512_T];
        ML_UNROLL for (int t = 0; t < MM512_T; t++)
            if (t < nt) s[t] = _mm512_set1_epi32(cx[t][b]);
        ML_UNROLL for (int j = 0; j < 8; j++)
            ML_UNROLL for (int t = 0; t < MM512_T; t++)
                if (t < nt) s[t] = _mm512_dpbusd_epi32(s[t], w[j], ml_avx512_bcast4(xq[t] + b * ML_QK + 4 * j));
        ML_UNROLL for (int t = 0; t < MM512_T; t++) {
            if (t >= nt) continue;
            const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(xd[(size_t)t * (n / ML_QK) + (size_t)b]));
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_cvtepi32_ps(s[t]), sc));
        }
    }
    ML_UNROLL for (int t = 0; t < MM512_T; t++)
        if (t < nt) _mm512_mask_storeu_ps(y + (size_t)t * ldy, m, acc[t]);
}

/* A batch that ml_avx512_r16_span does faster than the row tiles: at most
 * 16 tokens, or 32 over rows of at least 32 blocks (over short rows its
 * cost per group and pass weighs more: the accumulators, the block sums
 * made 16 blocks at a time). Measured in one run (Zen 5, 1
 * thread, matrices streamed from memory, ns per 16 rows x block, the tiles
 * against the stream): 2048 columns, Q8_0 16 tokens 45.6 / 29.7, 32 tokens
 * 70.0 / 55.0, 64 tokens 116 / 106, Q4_0 16 tokens 36.8 / 26.5, 32 tokens
 * 62.4 / 50.2; 288 columns, Q8_0 16 tokens 32.4 / 29.4, 32 tokens 57.7 /
 * 58.6-63.3; 128 tokens over 288 columns 207 / 227. */
ML_INLINE int mm512_r16_batch(int n_tok, int cols) {
    return n_tok <= 16 || (n_tok <= 32 && cols >= 32 * ML_QK);
}

/* ---- the loops ---------------------------------------------------------- */

#define MM512_GROUPS 4 /* 16-row groups per row tile */
#define MM512_TT 64    /* tokens per activation tile */

ML_INLINE int mm512_min(int a, int b) { return a < b ? a : b; }

/* A batch that ml_avx512_matmul_nt does faster: Q4_0 and at most
 * ML_AVX512_NT tokens. Measured in one run (weights of 300 MB, 2048
 * columns, fp16 scales, 1 thread; the transposes here against the
 * matvec's steps): Q4_0 2 tokens 1.27x / 1.17x one matvec's time, 4
 * tokens 1.49x / 1.41x, 6 tokens 1.64x / 1.73x; Q8_0, whose steps cost
 * more to load, 2 tokens 1.15x / 1.22x. */
ML_INLINE int mm512_small_batch(int n_tok, ml_type type) {
    return type == ML_TYPE_Q4_0 && n_tok <= ML_AVX512_NT;
}

/* The full register tile, or a short one with its own constant count so
 * its accumulators stay in registers too. */
_Static_assert(MM512_T == 8, "mm512_tile_n has a case for each shorter count");
ML_INLINE void mm512_tile_n(float *y, size_t ldy, __mmask16 m, int first, const mm512_wtile *wt, int nb,
                            const int8_t (*xq)[MM512_KB * ML_QK], const float *xd, size_t n,
                            const int32_t (*cx)[MM512_KB], int nt, uintptr_t pf, uintptr_t pfd, size_t bpb, size_t sb) {
    switch (nt) {
    case 1: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 1, pf, pfd, bpb, sb); break;
    case 2: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 2, pf, pfd, bpb, sb); break;
    case 3: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 3, pf, pfd, bpb, sb); break;
    case 4: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 4, pf, pfd, bpb, sb); break;
    case 5: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 5, pf, pfd, bpb, sb); break;
    case 6: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 6, pf, pfd, bpb, sb); break;
    case 7: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, 7, pf, pfd, bpb, sb); break;
    default: mm512_tile(y, ldy, m, first, wt, nb, xq, xd, n, cx, MM512_T, pf, pfd, bpb, sb); break;
    }
}

ML_INLINE void mm512_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, ml_type type,
                            ml_type st) {
    const int r16 = W->layout == ML_LAYOUT_R16; /* r0 (and r1, unless the last row) multiples of 16 */
    if (X->n_tok < 1) return;
    if (r16 && mm512_r16_batch(X->n_tok, W->cols)) { /* then the rows past the full groups, row-major, as any matrix's */
#define MM512_SPAN(mode) r0 = ml_avx512_r16_span(Y, (size_t)ldy, W, X, r0, r1, type, st, mode)
        ML_AVX512_BY_STREAM(ml_avx512_stream(W, type, X->n_tok), MM512_SPAN)
#undef MM512_SPAN
        if (r0 >= r1) return;
    }
    if (mm512_small_batch(X->n_tok, type)) {
        ml_avx512_matmul_nt(Y, ldy, W, X, r0, r1, type, st);
        return;
    }
    const int nbt = W->cols / ML_QK;
    const size_t sb = (size_t)ml_scale_bytes(st);
    const size_t bpb = ml_avx512_wbytes(type), wstride = (size_t)nbt * bpb;
    mm512_wtile wt[MM512_GROUPS];
    int8_t xq[MM512_TT][MM512_KB * ML_QK];
    int32_t cx[MM512_TT][MM512_KB];
    /* The next row tile is prefetched in the order it lies in memory, as
     * much per chunk as a chunk reads, half by the transposes and half by
     * the first token tile (mm512_wprep, mm512_tile): a tile's rows are read
     * chunk by chunk, 64 streams that the hardware prefetchers do not
     * follow. */
    uintptr_t pf = (uintptr_t)(W->q + (size_t)(r0 + 16 * MM512_GROUPS) * wstride);
    uintptr_t pfd = (uintptr_t)((const char *)W->d + (size_t)(r0 + 16 * MM512_GROUPS) * (size_t)nbt * sb);
    for (int r = r0; r < r1; r += 16 * MM512_GROUPS) {
        const int ng = (mm512_min(r1 - r, 16 * MM512_GROUPS) + 15) / 16;
        for (int b0 = 0; b0 < nbt; b0 += MM512_KB) {
            const int nb = mm512_min(nbt - b0, MM512_KB);
            for (int g = 0; g < ng; g++) {
                const int rg = r + 16 * g;
                if (r16 && r1 - rg >= 16) {
                    mm512_wprep_r16(&wt[g], W->q + ((size_t)rg * (size_t)nbt + (size_t)b0 * 16) * bpb,
                                    (const char *)W->d + ((size_t)rg * (size_t)nbt + (size_t)b0 * 16) * sb, nb, type, st,
                                    pf + (size_t)g * 16 * (size_t)nb * bpb);
                    continue;
                }
                mm512_wprep(&wt[g], W->q + (size_t)rg * wstride + (size_t)b0 * bpb, wstride, bpb,
                            (const char *)W->d + ((size_t)rg * (size_t)nbt + (size_t)b0) * sb, (size_t)nbt,
                            mm512_min(16, r1 - rg), nb, type, st, pf + (size_t)g * 16 * (size_t)nb * bpb);
            }
            for (int t0 = 0; t0 < X->n_tok; t0 += MM512_TT) {
                const int ntt = mm512_min(X->n_tok - t0, MM512_TT);
                mm512_xprep(xq, cx, X, t0, ntt, b0, nb, type);
                for (int g = 0; g < ng; g++) {
                    const int rg = r + 16 * g, nr = mm512_min(16, r1 - rg);
                    const __mmask16 m = (__mmask16)((1u << nr) - 1u);
                    const uintptr_t pg = pf + (size_t)g * 16 * (size_t)nb * bpb;
                    const uintptr_t pgd = pfd + (size_t)g * 16 * (size_t)nb * sb;
                    for (int t = 0; t < ntt; t += MM512_T) {
                        const int p = t0 == 0 && t == 0;
                        mm512_tile_n(Y + (size_t)(t0 + t) * (size_t)ldy + (size_t)rg, (size_t)ldy, m, b0 == 0, &wt[g],
                                     nb, (const int8_t(*)[MM512_KB * ML_QK])xq + t,
                                     X->d + (size_t)(t0 + t) * (size_t)nbt + (size_t)b0, (size_t)X->n,
                                     (const int32_t(*)[MM512_KB])cx + t, mm512_min(ntt - t, MM512_T),
                                     p ? pg : 0, p ? pgd : 0, bpb, sb);
                    }
                }
            }
            pf += (size_t)ng * 16 * (size_t)nb * bpb;
            pfd += (size_t)ng * 16 * (size_t)nb * sb;
        }
    }
}

#endif

/* The avx2 and avxvnni builds' batch matmul with 8 rows in the 8 lanes of
 * a 256-bit vector (Q4_0 on both builds, Q8_0 on avxvnni), over avx2_dot.h
 * (included first, with ML_AVX2_VNNI set as it is there): Y[t*ldy + r] =
 * W[r,:] . X[t] for the batch's tokens and rows [r0, r1). No (row, token)
 * dot is ever summed horizontally: the 4-row body's transpose-and-add tree
 * and its 4-lane float tail go away.
 *
 * A block of 8 rows is transposed once per call into 8 vectors: vector j,
 * lane i = row i's 4 weight bytes that meet the activation bytes 4j ..
 * 4j + 3, unsigned (Q4_0: the nibbles, w + 8; Q8_0: w ^ 0x80 = w + 128).
 * Q4_0 is transposed packed (packed dword j holds elements 4j .. 4j + 3
 * in its low nibbles and 16 + 4j .. in its high ones), then unpacked. A
 * token's block then costs 8 multiplies of those vectors by its 4
 * activation bytes broadcast to every lane (vpbroadcastd from memory):
 * avxvnni one vpdpbusd each; avx2 (Q4_0 only) one vpmaddubsw each, summed
 * in int16 (8 * 2 * 15 * 127 < 2^15) and widened once by vpmaddwd. The
 * weights' offset is removed by starting the sum at -off * sum(x) of the
 * token's block (mt8_cx, once per token and block for the row tile).
 *
 * Loop order: a row tile (MT8_G groups of 8 rows) and a chunk of MT8_KB
 * blocks are transposed once into wt (stack, 37 KiB), then every token
 * passes over them, MT8_T tokens per register tile. The weights are read
 * from memory once per call, in place. A batch of fewer than MT8_MIN tokens
 * (the transposes would cost more than they save) and the rows past the
 * last full group run the 4-row body (kernels/x86/matmul_body.h).
 *
 * Float order (kernels/canon.h rule 5): each lane, for its (row, token),
 * adds (float)sumi * (dw * dx) block after block, separate mul and add,
 * from 0.0f; between chunks of blocks the running sum waits in Y itself. */
#ifndef ML_AVX2_MATMUL_T8_H
#define ML_AVX2_MATMUL_T8_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/x86/matmul_body.h"

#define MT8_KB 32  /* blocks per chunk */
#define MT8_G 4    /* 8-row groups per row tile */
#define MT8_T 4    /* tokens per register tile */
#define MT8_TT 64  /* tokens per activation tile (mt8_cx) */
/* Smaller batches: the 4-row body. Measured (Intel Xeon, 5632x2048 from
 * memory): with its 8-token tiles and row prefetch it takes 0.67-0.85 of
 * this body's time at 8 and 9 tokens (a verification of 8 drafts), the
 * same at 10-12. */
#define MT8_MIN 10

/* One 8-row group's chunk of weights, transposed. */
typedef struct {
    __m256i w[MT8_KB][8]; /* (block, 4-byte column): lane i = row i */
    __m256 d[MT8_KB];     /* the rows' block scales */
} mt8_wtile;

ML_INLINE int mt8_min(int a, int b) { return a < b ? a : b; }

/* The 4x4 dword transposes of both 128-bit halves: p[j], half h = [z[0]
 * z[1] z[2] z[3]: half h, dword j]. */
ML_INLINE void mt8_dwords4x4(__m256i *p, const __m256i *z) {
    ML_UNROLL for (int h = 0; h < 2; h++) { /* dwords 2h, 2h + 1 */
        const __m256i a = h ? _mm256_unpackhi_epi32(z[0], z[1]) : _mm256_unpacklo_epi32(z[0], z[1]);
        const __m256i c = h ? _mm256_unpackhi_epi32(z[2], z[3]) : _mm256_unpacklo_epi32(z[2], z[3]);
        p[2 * h] = _mm256_unpacklo_epi64(a, c);
        p[2 * h + 1] = _mm256_unpackhi_epi64(a, c);
    }
}

/* Block b of the chunk, 8 rows from w (row 0's block; rows ws bytes apart). */
ML_INLINE void mt8_wprep_block(mt8_wtile *wt, int b, const int8_t *w, size_t ws, ml_type type) {
    __m256i z[4], p[4];
    if (type == ML_TYPE_Q4_0) {
        /* z[k] = [row k | row k + 4]: p[j] = dword j of rows 0..7 */
        ML_UNROLL for (int k = 0; k < 4; k++)
            z[k] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(w + (size_t)k * ws))),
                                           _mm_loadu_si128((const __m128i *)(w + (size_t)(k + 4) * ws)), 1);
        mt8_dwords4x4(p, z);
        const __m256i m = _mm256_set1_epi8(0x0F);
        ML_UNROLL for (int j = 0; j < 4; j++) {
            wt->w[b][j] = _mm256_and_si256(p[j], m);
            wt->w[b][4 + j] = _mm256_and_si256(_mm256_srli_epi16(p[j], 4), m);
        }
        return;
    }
    /* Q8_0: rows 0..3 and 4..7 transposed apart (p: [dword j | dword 4 + j]
     * of their 4 rows), then their halves joined */
    const __m256i off = _mm256_set1_epi8((char)0x80);
    __m256i q[4];
    ML_UNROLL for (int k = 0; k < 4; k++) z[k] = _mm256_loadu_si256((const __m256i *)(w + (size_t)k * ws));
    mt8_dwords4x4(p, z);
    ML_UNROLL for (int k = 0; k < 4; k++) z[k] = _mm256_loadu_si256((const __m256i *)(w + (size_t)(k + 4) * ws));
    mt8_dwords4x4(q, z);
    ML_UNROLL for (int j = 0; j < 4; j++) {
        wt->w[b][j] = _mm256_xor_si256(_mm256_permute2x128_si256(p[j], q[j], 0x20), off);
        wt->w[b][4 + j] = _mm256_xor_si256(_mm256_permute2x128_si256(p[j], q[j], 0x31), off);
    }
}

/* nb blocks of the 8 rows at q (bytes per row wstride, per block bpb) and
 * their scales (row 0's at d, nbt per row, of type st: converted exactly). */
ML_INLINE void mt8_wprep(mt8_wtile *wt, const int8_t *q, size_t wstride, size_t bpb, const void *d, size_t nbt, int nb,
                         ml_type type, ml_type st) {
    for (int b = 0; b < nb; b++) mt8_wprep_block(wt, b, q + (size_t)b * bpb, wstride, type);
    for (int b = 0; b < nb; b++) {
        float s[8];
        ML_UNROLL for (int i = 0; i < 8; i++) s[i] = ml_scale_at(d, (size_t)i * nbt + (size_t)b, st);
        wt->d[b] = _mm256_loadu_ps(s);
    }
}

/* cx[t][b] = -off * sum(x) of block b0 + b of token t0 + t (nt tokens, nb
 * blocks), 8 blocks per tree of adds (blocks past nb: zeros). */
_Static_assert(MT8_KB % 8 == 0, "mt8_cx stores 8 sums at a time");
ML_INLINE void mt8_cx(int32_t (*cx)[MT8_KB], const ml_qbatch *X, int t0, int nt, int b0, int nb, ml_type type) {
    const __m256i ones = _mm256_set1_epi8(1);
    const __m256i noff = _mm256_set1_epi16((short)(type == ML_TYPE_Q4_0 ? -ML_Q4_OFFSET : -128));
    for (int t = 0; t < nt; t++) {
        const int8_t *x = X->q + (size_t)(t0 + t) * (size_t)X->n + (size_t)b0 * ML_QK;
        for (int b = 0; b < nb; b += 8) {
            __m256i v[8];
            ML_UNROLL for (int k = 0; k < 8; k++)
                v[k] = b + k < nb ? _mm256_madd_epi16(_mm256_maddubs_epi16(ones, _mm256_loadu_si256(
                                                                                 (const __m256i *)(x + (size_t)(b + k) * ML_QK))),
                                                      noff)
                                  : _mm256_setzero_si256();
            const __m256i q0 = ml_avx2_quads(v), q1 = ml_avx2_quads(v + 4);
            const __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q0, q1, 0x31));
            _mm256_storeu_si256((__m256i *)&cx[t][b], s); /* b + 8 <= MT8_KB */
        }
    }
}

ML_INLINE __m256i mt8_bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* nt (<= MT8_T) tokens of one group over nb blocks: acc from Y (or 0.0f on
 * the first chunk), back to Y. y: token 0's 8 rows; xq, xd: token 0's
 * quants and scales at the chunk's block 0 (n and n / 32 per token); cx:
 * mt8_cx's, token 0. */
ML_INLINE void mt8_tile(float *y, size_t ldy, int first, const mt8_wtile *wt, int nb, const int8_t *xq, const float *xd,
                        size_t n, const int32_t (*cx)[MT8_KB], int nt) {
    __m256 acc[MT8_T];
    ML_UNROLL for (int t = 0; t < MT8_T; t++)
        if (t < nt) acc[t] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + (size_t)t * ldy);
    for (int b = 0; b < nb; b++) {
        __m256i s[MT8_T];
#if ML_AVX2_VNNI
        ML_UNROLL for (int t = 0; t < MT8_T; t++)
            if (t < nt) s[t] = _mm256_set1_epi32(cx[t][b]);
        ML_UNROLL for (int j = 0; j < 8; j++) {
            const __m256i w = wt->w[b][j];
            ML_UNROLL for (int t = 0; t < MT8_T; t++)
                if (t < nt) s[t] = _mm256_dpbusd_avx_epi32(s[t], w, mt8_bcast4(xq + (size_t)t * n + (size_t)b * ML_QK + 4 * j));
        }
#else
        /* token by token, each token's 8 products summed as they come:
         * with the tokens inside the 8 columns (one load of each weight
         * vector), gcc computed all 32 products first, through the stack
         * (Q4_0 at 128 tokens 1.15x slower; the weights come from L1) */
        ML_UNROLL for (int t = 0; t < MT8_T; t++) {
            if (t >= nt) continue;
            __m256i p = _mm256_maddubs_epi16(wt->w[b][0], mt8_bcast4(xq + (size_t)t * n + (size_t)b * ML_QK));
            ML_UNROLL for (int j = 1; j < 8; j++)
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(wt->w[b][j], mt8_bcast4(xq + (size_t)t * n + (size_t)b * ML_QK + 4 * j)));
            s[t] = _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), _mm256_set1_epi32(cx[t][b]));
        }
#endif
        const __m256 dw = wt->d[b];
        ML_UNROLL for (int t = 0; t < MT8_T; t++) {
            if (t >= nt) continue;
            const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(xd[(size_t)t * (n / ML_QK) + (size_t)b]));
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_cvtepi32_ps(s[t]), sc));
        }
    }
    ML_UNROLL for (int t = 0; t < MT8_T; t++)
        if (t < nt) _mm256_storeu_ps(y + (size_t)t * ldy, acc[t]);
}

/* The full register tile, or a short one with its own constant count. */
_Static_assert(MT8_T == 4, "mt8_tile_n has a case for each shorter count");
ML_INLINE void mt8_tile_n(float *y, size_t ldy, int first, const mt8_wtile *wt, int nb, const int8_t *xq, const float *xd,
                          size_t n, const int32_t (*cx)[MT8_KB], int nt) {
    switch (nt) {
    case 1: mt8_tile(y, ldy, first, wt, nb, xq, xd, n, cx, 1); break;
    case 2: mt8_tile(y, ldy, first, wt, nb, xq, xd, n, cx, 2); break;
    case 3: mt8_tile(y, ldy, first, wt, nb, xq, xd, n, cx, 3); break;
    default: mt8_tile(y, ldy, first, wt, nb, xq, xd, n, cx, MT8_T); break;
    }
}

/* Y = W X for weights of type type (avx2: Q4_0 only) with scales of type
 * st, rows [r0, r1) */
ML_INLINE void mt8_matmul(float *Y, int ldy, const ml_qtensor *W, const ml_qbatch *X, int r0, int r1, ml_type type,
                          ml_type st) {
    const int r8 = ml_x86_mm_rest8(Y, ldy, W, X, r0, r1, MT8_MIN, type, st);
    const int nbt = W->cols / ML_QK;
    const size_t bpb = ml_x86_wbytes(type), wstride = (size_t)nbt * bpb, n = (size_t)X->n;
    mt8_wtile wt[MT8_G];
    int32_t cx[MT8_TT][MT8_KB];
    for (int r = r0; r < r8; r += 8 * MT8_G) {
        const int ng = mt8_min((r8 - r) / 8, MT8_G);
        for (int b0 = 0; b0 < nbt; b0 += MT8_KB) {
            const int nb = mt8_min(nbt - b0, MT8_KB);
            for (int g = 0; g < ng; g++) {
                const size_t rg = (size_t)(r + 8 * g);
                mt8_wprep(&wt[g], W->q + rg * wstride + (size_t)b0 * bpb, wstride, bpb,
                          ml_x86_sptr(W->d, rg * (size_t)nbt + (size_t)b0, st), (size_t)nbt, nb, type, st);
            }
            for (int t0 = 0; t0 < X->n_tok; t0 += MT8_TT) {
                const int ntt = mt8_min(X->n_tok - t0, MT8_TT);
                mt8_cx(cx, X, t0, ntt, b0, nb, type);
                for (int g = 0; g < ng; g++)
                    for (int t = 0; t < ntt; t += MT8_T) {
                        const size_t tt = (size_t)(t0 + t);
                        mt8_tile_n(Y + tt * (size_t)ldy + (size_t)(r + 8 * g), (size_t)ldy, b0 == 0, &wt[g], nb,
                                   X->q + tt * n + (size_t)b0 * ML_QK, X->d + tt * (size_t)nbt + (size_t)b0, n,
                                   (const int32_t(*)[MT8_KB])cx + t, mt8_min(ntt - t, MT8_T));
                    }
            }
        }
    }
}

#endif
